// Shaping ops built from movement ops and elementwise selects: cat/stack,
// split/chunk/unbind, squeeze/unsqueeze/flatten/unflatten, repeat/tile, roll,
// tril/triu, unfold, reflect/replicate padding. Their gradients come from the
// ops they are built of.
#include <algorithm>
#include <optional>

#include "tensor/ops_util.h"
#include "tensor/record.h"

namespace loom {

using namespace tensor;

namespace {

Tensor narrow(const Tensor &t, int64_t dim, int64_t begin, int64_t end) {
  std::vector<std::pair<int64_t, int64_t>> b;
  for (int64_t d = 0; d < t.ndim(); d++) b.push_back(d == dim ? std::make_pair(begin, end) : std::make_pair(int64_t{0}, t.shape()[d]));
  return t.shrink(b);
}

// torch.cat promotes its inputs to one dtype.
DType promoted(const std::vector<Tensor> &ts) {
  Tensor acc = ts[0];
  DType dt = ts[0].dtype();
  for (size_t i = 1; i < ts.size(); i++) {
    // 0-d tensors only lift the category in result_type; cat treats every input alike.
    dt = result_type(Tensor::empty({1}, dt), Tensor::empty({1}, ts[i].dtype()));
  }
  return dt;
}

// split, chunk and unbind return their views together: in grad mode torch
// marks them so (MULTI_OUTPUT_NODE) and refuses in-place updates of them.
std::vector<Tensor> multi_output(std::vector<Tensor> views) {
  if (autograd::is_grad_enabled())
    for (const Tensor &v : views) TensorImpl::of(v)->multi_output_view = true;
  return views;
}

// torch's repeat, tile, roll and reflect/replicate padding always return a
// new tensor, even when they move nothing. `r`, built from `in`'s views, is
// made one where it is still `in` or a view of it: a write into either must
// not reach the other. Laid out row-major, as torch's result.
Tensor new_tensor(const Tensor &in, const Tensor &r, const char *name) {
  const auto &impl = TensorImpl::of(r);
  if (impl != TensorImpl::of(in) && !impl->view_base) return r;
  return autograd::own_tensor(r, name);
}

}  // namespace

namespace {
Tensor cat_nonempty(const std::vector<Tensor> &ts, int64_t dim, DType dt);
}

Tensor Tensor::cat(const std::vector<Tensor> &tensors, int64_t dim) {
  if (tensors.empty()) throw Error("cat(): expected a non-empty list of Tensors");
  // torch's result is channels_last where every input suggests it, else
  // row-major; the pieces are joined by elementwise nodes, which follow
  // channels_last inputs.
  std::optional<RowMajorScope> row_major;
  if (!std::all_of(tensors.begin(), tensors.end(),
                   [](const Tensor &t) { return suggests_channels_last(t.shape(), t.strides()); }))
    row_major.emplace();
  // torch skips 1-d empty tensors (legacy behaviour) when others have a shape.
  std::vector<Tensor> ts, skipped;
  for (const Tensor &t : tensors)
    (t.ndim() == 1 && t.shape()[0] == 0 ? skipped : ts).push_back(t);
  const DType dt = promoted(tensors);
  Tensor out = ts.empty() ? Tensor::zeros({0}, dt) : cat_nonempty(ts, dim, dt);
  if (skipped.empty()) return out;
  // torch's node still has an edge to each skipped input: each gets an empty gradient.
  std::vector<Tensor> inputs{out};
  inputs.insert(inputs.end(), skipped.begin(), skipped.end());
  return autograd::record("CatBackward", inputs, make_tensor(out.uop()), [n = skipped.size()](const Tensor &g, const Tensor &) {
    autograd::Grads grads{g};
    for (size_t i = 0; i < n; i++) grads.push_back(Tensor::zeros({0}, g.dtype()));
    return grads;
  });
}

namespace {
Tensor cat_nonempty(const std::vector<Tensor> &ts, int64_t dim, DType dt) {
  for (size_t i = 0; i < ts.size(); i++)
    if (ts[i].ndim() == 0)
      throw Error("cat(): zero-dimensional tensor (at position " + std::to_string(i) + ") cannot be concatenated");
  const int64_t d = wrap_dim(dim, ts[0].ndim(), "cat");
  int64_t total = 0;
  for (size_t i = 0; i < ts.size(); i++) {
    if (ts[i].ndim() != ts[0].ndim())
      throw Error("cat(): Tensors must have same number of dimensions: got " + std::to_string(ts[0].ndim()) +
                  " and " + std::to_string(ts[i].ndim()));
    for (int64_t k = 0; k < ts[0].ndim(); k++)
      if (k != d && ts[i].shape()[k] != ts[0].shape()[k])
        throw Error("cat(): Sizes of tensors must match except in dimension " + std::to_string(d) +
                    ". Expected size " + std::to_string(ts[0].shape()[k]) + " but got size " +
                    std::to_string(ts[i].shape()[k]) + " for tensor number " + std::to_string(i) + " in the list.");
    total += ts[i].shape()[d];
  }
  if (ts.size() == 1) {  // a copy, as torch's: never the input itself
    const Tensor x = ts[0].cast(dt);
    return autograd::record("CatBackward", {x}, make_tensor(UOp::make(Op::Contiguous, dt, {x.uop()})),
                            [](const Tensor &g, const Tensor &) { return autograd::Grads{g}; });
  }
  // Every output element reads every padded piece, so many pieces are joined
  // in groups, each group materialized: O(total * kGroup * levels), not
  // O(total * pieces) (a collate of 1000 images).
  constexpr size_t kGroup = 8;
  if (ts.size() > kGroup) {
    std::vector<Tensor> groups;
    for (size_t i = 0; i < ts.size(); i += kGroup) {
      const std::vector<Tensor> part(ts.begin() + static_cast<std::ptrdiff_t>(i),
                                     ts.begin() + static_cast<std::ptrdiff_t>(std::min(ts.size(), i + kGroup)));
      groups.push_back(cat_nonempty({cat_nonempty(part, d, dt)}, d, dt));  // one piece: a materialized copy
    }
    return cat_nonempty(groups, d, dt);
  }
  // Each piece padded with zeros to the full length; the pieces cover disjoint ranges.
  Tensor out;
  int64_t at = 0;
  for (size_t i = 0; i < ts.size(); i++) {
    std::vector<std::pair<int64_t, int64_t>> p(static_cast<size_t>(ts[i].ndim()), {0, 0});
    const int64_t n = ts[i].shape()[d];
    p[static_cast<size_t>(d)] = {at, total - at - n};
    at += n;
    Tensor piece = ts[i].cast(dt).pad(p, 0);
    out = i == 0 ? piece : (dt == DType::Bool ? out.logical_or(piece) : out.add(piece));
  }
  return out;
}
}  // namespace

Tensor Tensor::stack(const std::vector<Tensor> &tensors, int64_t dim) {
  if (tensors.empty()) throw Error("stack expects a non-empty TensorList");
  for (size_t i = 1; i < tensors.size(); i++)
    if (tensors[i].shape() != tensors[0].shape())
      throw Error("stack expects each tensor to be equal size, but got " + list_str(tensors[0].shape()) +
                  " at entry 0 and " + list_str(tensors[i].shape()) + " at entry " + std::to_string(i));
  const int64_t d = wrap_dim(dim, tensors[0].ndim() + 1, "stack");
  if (d < tensors[0].ndim()) {  // as torch: a cat along d split in two (so laid out as that cat)
    Shape joined = tensors[0].shape();
    joined.insert(joined.begin() + d, static_cast<int64_t>(tensors.size()));
    return cat(tensors, d).reshape(joined);
  }
  // A cat of the inputs unsqueezed last: torch's unsqueeze gives the new dim
  // stride 1, on which its channels_last_3d decision rests.
  std::optional<RowMajorScope> row_major;
  Shape unsqueezed = tensors[0].shape();
  unsqueezed.push_back(1);
  if (!std::all_of(tensors.begin(), tensors.end(), [&](const Tensor &t) {
        std::vector<int64_t> strides = t.strides();
        strides.push_back(1);
        return suggests_channels_last(unsqueezed, strides);
      }))
    row_major.emplace();
  std::vector<Tensor> u;
  for (const Tensor &t : tensors) u.push_back(t.unsqueeze(d));
  return cat(u, d);
}

std::vector<Tensor> Tensor::split(int64_t split_size, int64_t dim) const {
  if (ndim() == 0) throw Error("split(): split expects at least a 1-dimensional tensor");
  const int64_t d = wrap_dim(dim, ndim(), "split");
  const int64_t n = shape()[d];
  if (split_size < 0) throw Error("split(): split_size must be non-negative, but got split_size=" + std::to_string(split_size));
  if (split_size == 0 && n != 0)
    throw Error("split(): split_size can only be 0 if dimension size is 0, but got dimension size of " + std::to_string(n));
  const int64_t pieces = split_size == 0 || n == 0 ? 1 : (n - 1) / split_size + 1;
  std::vector<Tensor> out;
  for (int64_t i = 0; i < pieces; i++) {
    const int64_t b = std::min(i * split_size, n);  // i * split_size < n + split_size: no overflow
    out.push_back(narrow(*this, d, b, b + std::min(split_size, n - b)));
  }
  return multi_output(std::move(out));
}

std::vector<Tensor> Tensor::split(const std::vector<int64_t> &split_sizes, int64_t dim) const {
  if (ndim() == 0) throw Error("split_with_sizes(): expects at least a 1-dimensional tensor");
  const int64_t d = wrap_dim(dim, ndim(), "split_with_sizes");
  const int64_t n = shape()[d];
  int64_t sum = 0;
  for (int64_t s : split_sizes) {
    if (s < 0)
      throw Error("split_with_sizes expects split_sizes have only non-negative entries, but got split_sizes=" +
                  list_str(split_sizes));
    if (__builtin_add_overflow(sum, s, &sum)) sum = -1;  // cannot sum to n
  }
  if (sum != n)
    throw Error("split_with_sizes expects split_sizes to sum exactly to " + std::to_string(n) +
                " (input tensor's size at dimension " + std::to_string(d) + "), but got split_sizes=" +
                list_str(split_sizes));
  std::vector<Tensor> out;
  int64_t at = 0;
  for (int64_t s : split_sizes) {
    out.push_back(narrow(*this, d, at, at + s));
    at += s;
  }
  return multi_output(std::move(out));
}

std::vector<Tensor> Tensor::chunk(int64_t chunks, int64_t dim) const {
  if (ndim() == 0) throw Error("chunk expects at least a 1-dimensional tensor");
  if (chunks <= 0) throw Error("chunk expects `chunks` to be greater than 0, got: " + std::to_string(chunks));
  const int64_t d = wrap_dim(dim, ndim(), "chunk");
  const int64_t n = shape()[d];
  if (n == 0) {  // torch gives `chunks` empty tensors
    check_fits_in_memory(static_cast<uint64_t>(chunks), sizeof(Tensor) + sizeof(TensorImpl), "chunk");
    return split(std::vector<int64_t>(static_cast<size_t>(chunks), 0), d);
  }
  return split((n - 1) / chunks + 1, d);
}

std::vector<Tensor> Tensor::unbind(int64_t dim) const {
  if (ndim() == 0) throw IndexError("unbind(): Dimension specified as 0 but tensor has no dimensions");
  const int64_t d = wrap_dim(dim, ndim(), "unbind");
  Shape s = shape();
  s.erase(s.begin() + d);
  std::vector<Tensor> out;
  for (int64_t i = 0; i < shape()[d]; i++) out.push_back(narrow(*this, d, i, i + 1).reshape(s));
  return multi_output(std::move(out));
}

Tensor Tensor::squeeze(const Dims &dims) const {
  std::vector<bool> drop(static_cast<size_t>(ndim()), false);
  if (dims.empty()) {
    for (int64_t d = 0; d < ndim(); d++) drop[static_cast<size_t>(d)] = shape()[d] == 1;
  } else {
    for (int64_t x : dims) {
      const int64_t d = wrap_dim(x, std::max<int64_t>(ndim(), 1), "squeeze");
      if (ndim() > 0 && shape()[d] == 1) drop[static_cast<size_t>(d)] = true;
    }
  }
  Shape s;
  for (int64_t d = 0; d < ndim(); d++)
    if (!drop[static_cast<size_t>(d)]) s.push_back(shape()[d]);
  return reshape(s);
}

Tensor Tensor::unsqueeze(int64_t dim) const {
  const int64_t d = wrap_dim(dim, ndim() + 1, "unsqueeze");
  Shape s = shape();
  s.insert(s.begin() + d, 1);
  return reshape(s);
}

Tensor Tensor::flatten(int64_t start_dim, int64_t end_dim) const {
  if (ndim() == 0) {
    wrap_dim(start_dim, 1, "flatten");
    wrap_dim(end_dim, 1, "flatten");
    return reshape({1});
  }
  const int64_t a = wrap_dim(start_dim, ndim(), "flatten"), b = wrap_dim(end_dim, ndim(), "flatten");
  if (a > b) throw Error("flatten() has invalid args: start_dim cannot come after end_dim");
  Shape s(shape().begin(), shape().begin() + a);
  int64_t n = 1;
  for (int64_t d = a; d <= b; d++) n *= shape()[d];
  s.push_back(n);
  s.insert(s.end(), shape().begin() + b + 1, shape().end());
  return reshape(s);
}

Tensor Tensor::unflatten(int64_t dim, const std::vector<int64_t> &sizes) const {
  if (ndim() == 0) throw IndexError("unflatten: Dimension specified as " + std::to_string(dim) + " but tensor has no dimensions");
  const int64_t d = wrap_dim(dim, ndim(), "unflatten");
  if (sizes.empty()) throw Error("unflatten: sizes must be non-empty");
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < sizes.size(); i++) {
    if (sizes[i] == -1) {
      if (infer >= 0) throw Error("unflatten: only one dimension can be inferred");
      infer = static_cast<int64_t>(i);
    } else if (sizes[i] < 0) {
      throw Error("unflatten: invalid size " + std::to_string(sizes[i]) + " in " + list_str(sizes));
    } else if (__builtin_mul_overflow(known, sizes[i], &known)) {
      throw Error("unflatten: Provided sizes " + list_str(sizes) + " don't multiply up to the size of dim " +
                  std::to_string(d) + " (" + std::to_string(shape()[d]) + ") in the input tensor");
    }
  }
  const int64_t n = shape()[d];
  std::vector<int64_t> sz = sizes;
  if (infer >= 0) {
    if (known == 0 || n % known != 0)
      throw Error("unflatten: Provided sizes " + list_str(sizes) + " don't multiply up to the size of dim " +
                  std::to_string(d) + " (" + std::to_string(n) + ") in the input tensor");
    sz[static_cast<size_t>(infer)] = n / known;
  } else if (known != n) {
    throw Error("unflatten: Provided sizes " + list_str(sizes) + " don't multiply up to the size of dim " +
                std::to_string(d) + " (" + std::to_string(n) + ") in the input tensor");
  }
  Shape s(shape().begin(), shape().begin() + d);
  s.insert(s.end(), sz.begin(), sz.end());
  s.insert(s.end(), shape().begin() + d + 1, shape().end());
  return reshape(s);
}

Tensor Tensor::repeat(const std::vector<int64_t> &sizes) const {
  if (static_cast<int64_t>(sizes.size()) < ndim())
    throw Error("Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor");
  for (int64_t r : sizes)
    if (r < 0) throw Error("repeat: Trying to create tensor with negative dimension " + std::to_string(r));
  const int64_t k = static_cast<int64_t>(sizes.size());
  Shape padded(static_cast<size_t>(k - ndim()), 1);
  padded.insert(padded.end(), shape().begin(), shape().end());
  // (a, b) -> (1, a, 1, b) -> (r, a, s, b) -> (r*a, s*b)
  Shape with_ones, expanded, out;
  for (int64_t d = 0; d < k; d++) {
    with_ones.push_back(1);
    with_ones.push_back(padded[d]);
    expanded.push_back(sizes[d]);
    expanded.push_back(padded[d]);
    int64_t n = 0;
    if (__builtin_mul_overflow(sizes[d], padded[d], &n))
      throw Error("repeat: repeating dim " + std::to_string(d) + " of size " + std::to_string(padded[d]) + " " +
                  std::to_string(sizes[d]) + " times overflows int64");
    out.push_back(n);
  }
  return new_tensor(*this, reshape(with_ones).expand(expanded).reshape(out), "RepeatBackward");
}

Tensor Tensor::tile(const std::vector<int64_t> &sizes) const {
  std::vector<int64_t> s = sizes;
  while (static_cast<int64_t>(s.size()) < ndim()) s.insert(s.begin(), 1);
  return repeat(s);
}

Tensor Tensor::roll(const std::vector<int64_t> &shifts, const Dims &dims) const {
  if (dims.empty()) {
    if (shifts.size() != 1)
      throw Error("roll: shifts and dimensions must align. shifts: " + std::to_string(shifts.size()) +
                  ", dims: 0");
    return flatten().roll(shifts, {0}).reshape(shape());
  }
  if (shifts.size() != dims.size())
    throw Error("roll: shifts and dimensions must align. shifts: " + std::to_string(shifts.size()) +
                ", dims: " + std::to_string(dims.size()));
  if (ndim() == 0) return reshape({1}).roll(shifts, dims).reshape({});  // dims 0 / -1 name the only element
  // torch rolls one dim at a time, each a cat of two pieces (channels_last
  // where the input suggests it); a roll by 0 joins the whole with an empty
  // piece, which makes the result row-major.
  std::vector<int64_t> shift(dims.size());
  for (size_t i = 0; i < dims.size(); i++) {
    const int64_t n = shape()[wrap_dim(dims[i], ndim(), "roll")];
    shift[i] = n == 0 ? 0 : ((shifts[i] % n) + n) % n;
  }
  std::optional<RowMajorScope> row_major;
  if (std::count(shift.begin(), shift.end(), 0)) row_major.emplace();
  Tensor out = *this;
  for (size_t i = 0; i < dims.size(); i++) {
    const int64_t d = wrap_dim(dims[i], ndim(), "roll");
    const int64_t n = shape()[d], s = shift[i];
    if (s == 0) continue;
    out = cat({narrow(out, d, n - s, n), narrow(out, d, 0, n - s)}, d);
  }
  return new_tensor(*this, out, "RollBackward");
}

namespace {
// keep[i, j] = j - i <= k (tril) or j - i >= k (triu), broadcast over the leading dims.
Tensor triangle(const Tensor &t, int64_t k, bool lower, const char *op) {
  if (t.ndim() < 2 && t.numel() > 0)  // torch lets empty tensors through
    throw Error(std::string(op) + ": input tensor must have at least 2 dimensions; got " + describe(t.uop()));
  if (t.ndim() < 2) return t.where(t, t);
  RowMajorScope row_major;  // torch's result is row-major
  const int64_t r = t.shape()[t.ndim() - 2], c = t.shape()[t.ndim() - 1];
  Tensor diff = Tensor::arange(c).reshape({1, c}).sub(Tensor::arange(r).reshape({r, 1}));
  Tensor keep = lower ? diff.le(Tensor::full({}, static_cast<long long>(k), DType::Int64))
                      : diff.ge(Tensor::full({}, static_cast<long long>(k), DType::Int64));
  return keep.where(t, Tensor::zeros({}, t.dtype()));
}
}  // namespace

Tensor Tensor::tril(int64_t k) const { return triangle(*this, k, true, "tril"); }
Tensor Tensor::triu(int64_t k) const { return triangle(*this, k, false, "triu"); }

namespace {
// unfold's gradient: window w's element k goes back to position w * step + k
// along dim d, summed where windows overlap (one dilated, shifted copy of
// each window element's gradients).
Tensor unfold_backward(const Tensor &g, const Shape &in_shape, int64_t d, int64_t size, int64_t step) {
  const int64_t n = in_shape[static_cast<size_t>(d)], windows = g.shape()[static_cast<size_t>(d)];
  const int64_t last = g.ndim() - 1, span = (windows - 1) * step + 1;
  Tensor grad = Tensor::zeros(in_shape, g.dtype());
  for (int64_t k = 0; k < size && windows > 0; k++) {
    Tensor gk = narrow(g, last, k, k + 1).reshape(Shape(g.shape().begin(), g.shape().end() - 1));
    if (step > 1) {  // dilated: a new axis after d padded to `step`, merged into d, the first `span` kept
      Shape with_axis = gk.shape(), merged = gk.shape();
      with_axis.insert(with_axis.begin() + d + 1, 1);
      merged[static_cast<size_t>(d)] = windows * step;
      std::vector<std::pair<int64_t, int64_t>> p(with_axis.size(), {0, 0});
      p[static_cast<size_t>(d) + 1] = {0, step - 1};
      gk = narrow(gk.reshape(with_axis).pad(p).reshape(merged), d, 0, span);
    }
    std::vector<std::pair<int64_t, int64_t>> p(static_cast<size_t>(gk.ndim()), {0, 0});
    p[static_cast<size_t>(d)] = {k, n - k - span};
    grad = grad.add(gk.pad(p));
  }
  return grad;
}

// Over a plain view (one unmasked view, no negative stride) unfold is itself
// one view, with the strides torch reports: window w, element k reads
// x[w * step + k] along d. Elsewhere (masks, flips: places torch copied)
// nullopt.
std::optional<Tensor> unfold_view(const Tensor &x, int64_t d, int64_t size, int64_t step) {
  const shape::ShapeTracker &st = tracker_of(x.uop());
  if (base_of(x.uop())->op == uop::Op::Const || !st.single_plain()) return std::nullopt;
  const shape::View &v = st.views[0];
  if (std::any_of(v.strides.begin(), v.strides.end(), [](int64_t s) { return s < 0; })) return std::nullopt;
  Shape shape = v.shape;
  shape::Strides strides = v.strides;
  const auto dd = static_cast<size_t>(d);
  shape[dd] = (shape[dd] - size) / step + 1;
  strides[dd] = v.strides[dd] * step;
  shape.push_back(size);
  strides.push_back(v.strides[dd]);
  Tensor out = make_tensor(uop::view(x.uop(), shape::ShapeTracker{{shape::View::create(shape, strides, v.offset)}}));
  const Shape in_shape = x.shape();
  return autograd::record(
      "UnfoldBackward", {x}, out,
      [=](const Tensor &g, const Tensor &) { return autograd::Grads{unfold_backward(g, in_shape, d, size, step)}; },
      [=](const Tensor &t) { return t.unfold(d, size, step); });
}
}  // namespace

Tensor Tensor::unfold(int64_t dim, int64_t size, int64_t step) const {
  if (ndim() == 0) {
    wrap_dim(dim, 1, "unfold");
    if (size > 1) throw Error("unfold: maximum size for tensor at dimension 0 is 1 but size is " + std::to_string(size));
    if (step <= 0) throw Error("unfold: step is " + std::to_string(step) + " but must be > 0");
    return reshape({1}).unfold(0, size, step).reshape({size});
  }
  const int64_t d = wrap_dim(dim, ndim(), "unfold");
  const int64_t n = shape()[d];
  if (size > n)
    throw Error("unfold: maximum size for tensor at dimension " + std::to_string(d) + " is " + std::to_string(n) +
                " but size is " + std::to_string(size));
  if (size < 0) throw Error("unfold: size is " + std::to_string(size) + " but must be >= 0");
  if (step <= 0) throw Error("unfold: step is " + std::to_string(step) + " but must be > 0");
  if (auto direct = unfold_view(*this, d, size, step)) return *direct;
  // Move dim last: (..., n). Repeat it `size` times and re-read the flat rows
  // with a row length of n + 1, so row i starts at element i: w[i, j] = x[i + j].
  Dims order;
  for (int64_t k = 0; k < ndim(); k++)
    if (k != d) order.push_back(k);
  order.push_back(d);
  Tensor x = permute(order);
  Shape lead(x.shape().begin(), x.shape().end() - 1);
  Shape rep = lead;
  rep.push_back(size);
  rep.push_back(n);
  Tensor w = x.unsqueeze(-2).expand(rep);
  Shape flat = lead;
  flat.push_back(size * n);
  std::vector<std::pair<int64_t, int64_t>> p(lead.size(), {0, 0});
  p.push_back({0, size});
  Shape rows = lead;
  rows.push_back(size);
  rows.push_back(n + 1);
  w = w.reshape(flat).pad(p, 0).reshape(rows);
  const int64_t r = static_cast<int64_t>(lead.size());
  w = w.slice(r + 1, 0, n - size + 1, step);  // (..., size, windows)
  // (lead..., size, windows) -> dims before d, windows, dims after d, size
  const int64_t windows = w.shape()[r + 1];
  (void)windows;
  Dims back;
  for (int64_t k = 0; k < d; k++) back.push_back(k);
  back.push_back(r + 1);
  for (int64_t k = d; k < r; k++) back.push_back(k);
  back.push_back(r);
  // torch's unfold is a view of its input. Built over a pad (a copy point),
  // the result would hang off that internal copy: register it as a view of
  // this tensor instead, so an in-place update of this tensor (or of another
  // view of it) rebuilds it.
  Tensor out = w.permute(back);
  autograd::register_view(TensorImpl::of(out), impl_,
                          [dim, size, step](const Tensor &t) { return t.unfold(dim, size, step); });
  return out;
}

Tensor Tensor::pad_mode(const std::vector<std::pair<int64_t, int64_t>> &pad, const std::string &mode) const {
  if (mode != "reflect" && mode != "replicate")
    throw Error("pad_mode: mode must be \"reflect\" or \"replicate\", got \"" + mode + "\"");
  RowMajorScope row_major;  // torch's result is row-major, a channels_last input's too
  const int64_t k = static_cast<int64_t>(pad.size());
  if (k < 1 || k > 3) throw Error("pad_mode: " + mode + " padding supports 1 to 3 padded dims, got " + std::to_string(k));
  if (ndim() != k + 1 && ndim() != k + 2)
    throw Error("pad_mode: " + mode + " padding of " + std::to_string(k) + " dims expects a " + std::to_string(k + 1) +
                "-d or " + std::to_string(k + 2) + "-d input, got " + describe(uop()));
  if (!is_float(dtype())) unsupported_dtype(mode == "reflect" ? "reflection_pad" : "replication_pad", dtype());
  // Only a batch dim may be empty, as in torch; 1-d and 2-d reflect padding
  // also lets an unbatched input's leading dim be empty.
  const bool leading_may_be_empty = ndim() == k + 2 || (mode == "reflect" && k < 3);
  for (int64_t d = leading_may_be_empty ? 1 : 0; d < ndim(); d++)
    if (shape()[d] == 0)
      throw Error("pad_mode: expected a tensor with possibly 0 batch size and other non-zero dimensions, got " +
                  describe(uop()));
  // torch's reflection and replication pad nodes save their input.
  const char *node = mode == "reflect" ? "ReflectionPadBackward" : "ReplicationPadBackward";
  // A half input pads in float32, so that its gradient (a sum over the
  // positions each element was copied to, stage by stage) is rounded once.
  if (dtype() == DType::Float16 || dtype() == DType::BFloat16)
    return autograd::saves_inputs(cast(DType::Float32).pad_mode(pad, mode).cast(dtype()), {*this}, node);
  Tensor out = *this;
  for (int64_t i = 0; i < k; i++) {
    const int64_t d = ndim() - k + i;
    const int64_t n = out.shape()[d];
    const auto [before, after] = pad[static_cast<size_t>(i)];
    if (mode == "reflect") {
      if (before >= n || after >= n || before < 0 || after < 0)
        throw Error("pad_mode: Padding size should be less than the corresponding input dimension, but got: padding (" +
                    std::to_string(before) + ", " + std::to_string(after) + ") at dimension " + std::to_string(d) +
                    " of input " + describe(uop()));
      std::vector<Tensor> parts;
      if (before > 0) parts.push_back(narrow(out, d, 1, before + 1).flip({d}));
      parts.push_back(out);
      if (after > 0) parts.push_back(narrow(out, d, n - 1 - after, n - 1).flip({d}));
      out = parts.size() == 1 ? out : cat(parts, d);
    } else {
      if (before < 0 || after < 0) throw Error("pad_mode: negative replicate padding is not supported");
      if (n == 0 && before + after > 0)
        throw Error("pad_mode: cannot replicate-pad an empty dimension " + std::to_string(d) + " of " + describe(uop()));
      std::vector<Tensor> parts;
      Shape s = out.shape();
      if (before > 0) {
        s[d] = before;
        parts.push_back(narrow(out, d, 0, 1).expand(s));
      }
      parts.push_back(out);
      if (after > 0) {
        s[d] = after;
        parts.push_back(narrow(out, d, n - 1, n).expand(s));
      }
      out = parts.size() == 1 ? out : cat(parts, d);
    }
  }
  return autograd::saves_inputs(new_tensor(*this, out, node), {*this}, node);
}

}  // namespace loom
