// Movement ops: each returns a new VIEW over the same base; nothing is copied.
#include <algorithm>
#include <numeric>
#include <optional>

#include "tensor/ops_util.h"
#include "tensor/record.h"

namespace loom {

using namespace tensor;
using autograd::Grads;

namespace {

// A shape a backward rule or view replay keeps: its list from the graph's
// pool, which the op's closure is in too (not a malloc per op).
using KeptShape = shape::PoolVector<int64_t>;
KeptShape keep(const Shape &s) { return KeptShape(s.begin(), s.end()); }
Shape as_shape(const KeptShape &s) { return Shape(s.begin(), s.end()); }

Tensor with_tracker(const Tensor &t, shape::ShapeTracker st) { return make_tensor(view(t.uop(), std::move(st))); }

std::string dims_str(const Dims &d) { return shape_str(d); }
}  // namespace

Dims tensor::clone_order(const Tensor &t) {
  const shape::ShapeTracker &st = tracker_of(t.uop());
  if (st.single_plain()) return iterator_order({st.views[0].strides}, t.shape());
  return row_major_order(t.ndim());
}

Dims tensor::row_major_order(int64_t ndim) {
  Dims order(static_cast<size_t>(ndim));
  std::iota(order.begin(), order.end(), int64_t{0});
  return order;
}

Tensor tensor::copy_with_layout(const Tensor &value, const Dims &order) {
  if (std::is_sorted(order.begin(), order.end())) return make_tensor(copy_point(value.uop()));  // row-major
  const UOpRef copied = copy_point(uop::view(value.uop(), tracker_of(value.uop()).permute(order)));
  return make_tensor(uop::view(copied, tracker_of(copied).permute(inverse_permutation(order))));
}

bool tensor::strides_in_order(const Tensor &r, const Dims &order) {
  const std::vector<int64_t> strides = r.strides();
  int64_t want = 1;
  for (size_t i = order.size(); i-- > 0;) {
    const size_t d = static_cast<size_t>(order[i]);
    if (r.shape()[d] == 1) continue;
    if (strides[d] != want) return false;
    want *= r.shape()[d];
  }
  return true;
}

Tensor tensor::stored_as(const Tensor &r, const Dims &order) {
  return strides_in_order(r, order) ? r : copy_with_layout(r, order);
}

Tensor tensor::laid_out(const Tensor &r, const Dims &order, const char *name) {
  return !TensorImpl::of(r)->view_base && strides_in_order(r, order) ? r : autograd::own_tensor(r, name, &order);
}

namespace {
// torch's suggest_memory_format: a 4-d (5-d) input whose strides look
// channels-last gets a channels-last copy (N, H, W, C order), else row-major.
Dims pad_layout_order(const Shape &sizes, const shape::ShapeTracker &st) {
  Dims order = row_major_order(static_cast<int64_t>(sizes.size()));
  if (!st.single_plain() || !suggests_channels_last(sizes, st.views[0].strides)) return order;
  order.erase(order.begin() + 1);
  order.push_back(1);
  return order;
}
// pad's forward: a masked view laid out as torch lays out its fresh tensor.
Tensor constant_pad(const Tensor &x, const std::vector<std::pair<int64_t, int64_t>> &pads, Scalar value) {
  DType dt = x.dtype();
  // torch pads into a fresh tensor (channels-last when the input looks so);
  // with nothing to pad it clones, keeping the input's stride order.
  auto st = tracker_of(x.uop());
  bool nothing = std::all_of(pads.begin(), pads.end(), [](auto p) { return p.first == 0 && p.second == 0; });
  Dims order = nothing ? clone_order(x) : pad_layout_order(x.shape(), st);
  Tensor padded = with_tracker(x, tracker_of(x.uop()).pad(pads));
  if (value.to_double() == 0) return copy_with_layout(padded, order);
  // Masked-out elements read 0; a non-zero fill selects the value there.
  Tensor valid = make_tensor(view(UOp::const_(DType::Bool, 1),
                                  shape::ShapeTracker::from_shape({}).reshape(Shape(x.ndim(), 1)).expand(x.shape())));
  valid = with_tracker(valid, tracker_of(valid.uop()).pad(pads));
  return copy_with_layout(
      make_tensor(uop::where(valid.uop(), padded.uop(), const_tensor(value.to_double(), dt, padded.shape()))), order);
}

}  // namespace

Tensor Tensor::reshape(const Shape &new_shape) const {
  int64_t infer = -1, known = 1;
  for (size_t i = 0; i < new_shape.size(); i++) {
    if (new_shape[i] == -1) {
      if (infer >= 0) throw Error("reshape: only one dimension can be inferred in " + shape_str(new_shape));
      infer = static_cast<int64_t>(i);
    } else if (new_shape[i] < 0) {
      throw Error("reshape: invalid shape dimension " + std::to_string(new_shape[i]) + " in " + shape_str(new_shape));
    } else if (__builtin_mul_overflow(known, new_shape[i], &known)) {
      throw Error("reshape: shape " + shape_str(new_shape) + " overflows int64 (numel: integer multiplication overflow)");
    }
  }
  auto fail = [&] {
    throw Error("reshape: cannot reshape " + describe(uop()) + " to " + shape_str(new_shape) + ": shape '" +
                shape_str(new_shape) + "' is invalid for input of size " + std::to_string(numel()));
  };
  Shape inferred;  // new_shape with its -1 filled in (a copy only then)
  if (infer >= 0) {
    if (known == 0 || numel() % known != 0) fail();
    inferred = new_shape;
    inferred[infer] = numel() / known;
  }
  const Shape &s = infer >= 0 ? inferred : new_shape;
  if (shape::prod(s) != numel()) fail();
  if (s == shape()) return *this;
  const shape::ShapeTracker &st = tracker_of(uop());
  auto merged = st.reshape(s);
  // A reshape that cannot stay one view is a copy in torch.
  const bool copies = merged.views.size() > st.views.size();
  Tensor r = with_tracker(*this, std::move(merged));
  return autograd::record("ReshapeBackward", autograd::Inputs(this, 1),
                          copies ? make_tensor(copy_point(r.uop())) : std::move(r),
                          [in = keep(shape())](const Tensor &g, const Tensor &) {
                            return Grads{g.reshape(as_shape(in))};
                          },
                          copies ? ViewReplay() : [s = keep(s)](const Tensor &t) { return t.reshape(as_shape(s)); });
}

Tensor Tensor::permute(const Dims &order) const {
  int64_t n = ndim();
  if (static_cast<int64_t>(order.size()) != n)
    throw Error("permute: dims " + dims_str(order) + " do not match the " + std::to_string(n) + " dims of " +
                describe(uop()));
  Dims o(order.size());
  std::vector<bool> seen(n, false);
  for (size_t i = 0; i < order.size(); i++) {
    o[i] = wrap_dim(order[i], n, "permute");
    if (seen[o[i]]) throw Error("permute: dims " + dims_str(order) + " repeat dim " + std::to_string(o[i]));
    seen[o[i]] = true;
  }
  const Dims inverse = inverse_permutation(o);
  return autograd::record("PermuteBackward", {*this}, with_tracker(*this, tracker_of(uop()).permute(o)),
                          [inverse](const Tensor &g, const Tensor &) { return Grads{g.permute(inverse)}; },
                          [o](const Tensor &t) { return t.permute(o); });
}

Tensor Tensor::transpose(int64_t dim0, int64_t dim1) const {
  Dims o(ndim());
  for (int64_t i = 0; i < ndim(); i++) o[i] = i;
  if (ndim() == 0) {
    wrap_dim(dim0, 0, "transpose");
    wrap_dim(dim1, 0, "transpose");
    return permute(o);  // a view of a 0-d tensor, as torch's (not the tensor itself)
  }
  std::swap(o[wrap_dim(dim0, ndim(), "transpose")], o[wrap_dim(dim1, ndim(), "transpose")]);
  return permute(o);
}

Tensor Tensor::expand(const Shape &target) const {
  const Shape &cur = shape();
  auto fail = [&](int64_t d, int64_t want, int64_t have) {
    throw Error("expand: the expanded size of the tensor (" + std::to_string(want) +
                ") must match the existing size (" + std::to_string(have) + ") at non-singleton dimension " +
                std::to_string(d) + ".  Target sizes: " + shape_str(target) + ".  Tensor sizes: " + shape_str(cur));
  };
  if (target.size() < cur.size())
    throw Error("expand: the number of sizes provided (" + std::to_string(target.size()) +
                ") must be greater or equal to the number of dimensions in the tensor (" + std::to_string(cur.size()) +
                "); target " + shape_str(target) + ", tensor " + describe(uop()));
  if (target == cur) return *this;
  size_t lead = target.size() - cur.size();
  Shape padded(lead, 1), out(target.size());
  padded.insert(padded.end(), cur.begin(), cur.end());
  for (size_t d = 0; d < target.size(); d++) {
    int64_t want = target[d];
    if (d < lead && want < 0) throw Error("expand: -1 is not allowed in a leading, non-existing dimension (" +
                                          std::to_string(d) + ") of target " + shape_str(target));
    if (want == -1) want = padded[d];
    if (want < 0) throw Error("expand: invalid size " + std::to_string(want) + " in " + shape_str(target));
    if (padded[d] != want && padded[d] != 1) fail(static_cast<int64_t>(d), want, padded[d]);
    out[d] = want;
  }
  if (out == cur) return *this;
  // The engine sums the gradient back down to the input's shape.
  return autograd::apply(
      "ExpandBackward", {*this},
      [&] { return make_tensor(broadcast_to(*this, out)); },
      [](const Tensor &g, const Tensor &) { return Grads{g}; },
      [out = keep(out)](const Tensor &t) { return t.expand(as_shape(out)); });
}

Tensor Tensor::pad(const std::vector<std::pair<int64_t, int64_t>> &pads, Scalar value) const {
  if (static_cast<int64_t>(pads.size()) != ndim())
    throw Error("pad: " + std::to_string(pads.size()) + " (before, after) pairs given for the " +
                std::to_string(ndim()) + " dims of " + describe(uop()));
  for (size_t d = 0; d < pads.size(); d++) {
    if (pads[d].first < 0 || pads[d].second < 0)
      throw Error("pad: negative padding (" + std::to_string(pads[d].first) + ", " + std::to_string(pads[d].second) +
                  ") at dim " + std::to_string(d) + " of " + describe(uop()));
    if (int64_t n = 0; __builtin_add_overflow(pads[d].first, shape()[d], &n) || __builtin_add_overflow(n, pads[d].second, &n))
      throw Error("pad: padding (" + std::to_string(pads[d].first) + ", " + std::to_string(pads[d].second) +
                  ") makes dim " + std::to_string(d) + " of " + describe(uop()) + " longer than 2^63 elements");
  }
  DType dt = dtype();
  if (value.kind == Scalar::Kind::Float && !is_float(dt))
    throw Error("pad: value " + value.str() + " cannot be represented in " + dtype_name(dt));
  std::vector<std::pair<int64_t, int64_t>> inside(pads.size());
  for (size_t d = 0; d < pads.size(); d++) inside[d] = {pads[d].first, pads[d].first + shape()[d]};
  return autograd::apply(
      "ConstantPadNdBackward", {*this}, [&] { return constant_pad(*this, pads, value); },
      [inside](const Tensor &g, const Tensor &) { return Grads{g.shrink(inside)}; });
}

Tensor Tensor::shrink(const std::vector<std::pair<int64_t, int64_t>> &bounds) const {
  if (static_cast<int64_t>(bounds.size()) != ndim())
    throw Error("shrink: " + std::to_string(bounds.size()) + " (begin, end) pairs given for the " +
                std::to_string(ndim()) + " dims of " + describe(uop()));
  for (size_t d = 0; d < bounds.size(); d++) {
    auto [b, e] = bounds[d];
    if (b < 0 || e < b || e > shape()[d])
      throw IndexError("shrink: bounds (" + std::to_string(b) + ", " + std::to_string(e) + ") out of range for dim " +
                       std::to_string(d) + " of size " + std::to_string(shape()[d]) + " in " + describe(uop()));
  }
  std::vector<std::pair<int64_t, int64_t>> pads(bounds.size());
  for (size_t d = 0; d < bounds.size(); d++) pads[d] = {bounds[d].first, shape()[d] - bounds[d].second};
  return autograd::record("SliceBackward", {*this}, with_tracker(*this, tracker_of(uop()).shrink(bounds)),
                          [pads](const Tensor &g, const Tensor &) { return Grads{g.pad(pads)}; },
                          [bounds](const Tensor &t) { return t.shrink(bounds); });
}

Tensor Tensor::flip(const Dims &dims) const {
  std::vector<bool> f(std::max<int64_t>(ndim(), 1), false);  // a 0-d tensor flips over dim 0 (nothing)
  for (auto d : dims) {
    int64_t w = wrap_dim(d, ndim(), "flip");
    if (f[w]) throw Error("flip: dim " + std::to_string(w) + " appears multiple times in the list of dims");
    f[w] = true;
  }
  f.resize(ndim());
  // torch's flip always returns a fresh tensor, even when it reverses nothing,
  // laid out in its input's stride order.
  auto st = tracker_of(uop());
  return autograd::record("FlipBackward", {*this}, copy_with_layout(with_tracker(*this, st.flip(f)), clone_order(*this)),
                          [dims](const Tensor &g, const Tensor &) { return Grads{g.flip(dims)}; });
}

Tensor Tensor::slice(int64_t dim, std::optional<int64_t> start, std::optional<int64_t> stop, int64_t step) const {
  if (ndim() == 0) throw IndexError("slice: cannot slice a 0-d tensor");
  int64_t d = wrap_dim(dim, ndim(), "slice");
  if (step == 0) throw ValueError("slice: slice step cannot be zero");
  int64_t n = shape()[d];
  std::vector<std::pair<int64_t, int64_t>> b(ndim());
  for (int64_t i = 0; i < ndim(); i++) b[i] = {0, shape()[i]};
  auto norm = [n](int64_t v, int64_t lo, int64_t hi) { return std::clamp(v < 0 ? v + n : v, lo, hi); };
  // |step| beyond the dim's size reads one element, as n would: clamping it
  // keeps every product below in range (and -INT64_MIN is never taken).
  const int64_t most = std::max<int64_t>(n, 1);
  int64_t k = step > 0 ? std::min(step, most) : step >= -most ? -step : most, first, count;
  if (step > 0) {
    first = start ? norm(*start, 0, n) : 0;
    int64_t e = stop ? norm(*stop, 0, n) : n;
    count = e > first ? (e - first - 1) / k + 1 : 0;  // ceil((e - first) / k), no sum past int64
  } else {
    // Python semantics: start defaults to the end, stop to before the front.
    int64_t s = start ? norm(*start, -1, n - 1) : n - 1, e = stop ? norm(*stop, -1, n - 1) : -1;
    count = s > e ? (s - e - 1) / k + 1 : 0;
    first = n - 1 - s;  // the same elements, read forward from the flipped dim
  }
  if (count == 0) {
    b[d] = {0, 0};
    return shrink(b);
  }
  // A negative step reads the flipped dim forward: torch's x.flip(d) (a copy,
  // which a write through the slice changes, not x) sliced with step -step.
  if (step < 0) return flip({d}).slice(d, first, first + (count - 1) * k + 1, k);
  if (k == 1) {  // a run of elements: shrink's view, gradient and replay are the slice's
    b[d] = {first, first + count};
    return shrink(b);
  }
  auto forward = [&] {
    b[d] = {first, first + (count - 1) * k + 1};
    Tensor t = shrink(b);
    std::vector<int64_t> steps(ndim(), 1);
    steps[d] = k;
    return with_tracker(t, tracker_of(t.uop()).step(steps));
  };
  // The gradient lands on every k-th element from `first`.
  return autograd::apply(
      "SliceBackward", {*this}, forward,
      [d, n, first, k](const Tensor &g, const Tensor &) {
        Shape s = g.shape();
        s.insert(s.begin() + d + 1, 1);
        std::vector<std::pair<int64_t, int64_t>> widen(s.size(), {0, 0});
        widen[d + 1] = {0, k - 1};
        Shape spread = g.shape();
        spread[d] *= k;
        Tensor t = g.reshape(s).pad(widen).reshape(spread);  // g[i] at i * k, zeros between
        const int64_t len = first + spread[d];
        std::vector<std::pair<int64_t, int64_t>> place(t.ndim(), {0, 0});
        place[d] = {first, len < n ? n - len : 0};
        t = t.pad(place);
        if (len > n) {
          std::vector<std::pair<int64_t, int64_t>> cut(t.ndim());
          for (int64_t i = 0; i < t.ndim(); i++) cut[i] = {0, t.shape()[i]};
          cut[d] = {0, n};
          t = t.shrink(cut);
        }
        return Grads{t};
      },
      [=](const Tensor &t) { return t.slice(dim, start, stop, step); });
}

namespace {
// Where as_strided reads: the storage node, its size, and this tensor's own
// elements in it (for the backward).
struct StridedStorage {
  UOpRef base;
  int64_t size = 0, offset = 0;
  Shape shape;                   // the storage node's shape
  shape::ShapeTracker elements;  // this tensor's view of it
  bool plain = false;            // the storage is the base node's value, elements its view
};

StridedStorage strided_storage(const Tensor &x);

bool non_negative(const shape::ShapeTracker &st) {
  return st.single_plain() &&
         std::all_of(st.views[0].strides.begin(), st.views[0].strides.end(), [](int64_t v) { return v >= 0; });
}

// A view whose base's storage is the base's own contiguous value (the base is
// a result torch would have materialized: a constant, a pad, a flip) lies in
// that storage where the view's movement ops put it, not in a copy of its own.
std::optional<StridedStorage> storage_through_base(const Tensor &x) {
  const TensorImpl &impl = *TensorImpl::of(x);
  if (!impl.view_base || !impl.view_replay) return std::nullopt;
  const Tensor base = TensorImpl::wrap(impl.view_base);
  StridedStorage s = strided_storage(base);
  if (s.plain) return std::nullopt;  // x's own nodes reach the same storage
  const shape::ShapeTracker st = storage_view(base.shape(), base.dtype(), impl.view_replay)
                                     .compose_onto(s.elements.reshape({base.numel()}));
  if (!non_negative(st)) return std::nullopt;
  s.plain = true;
  s.elements = st;
  s.offset = st.views[0].offset;
  return s;
}

// The storage is the base node's value (a buffer, or a lazy result torch would
// have materialized) when the tensor is a plain view of it. Flips, pads and
// non-mergeable reshapes are copies in torch, so there the storage is the
// contiguous value of the tensor. A broadcast constant has no storage of its
// own here: it is materialized at its current shape (a view of one is in its
// base's, storage_through_base).
StridedStorage strided_storage(const Tensor &x) {
  autograd::NoGradGuard no_grad;
  StridedStorage s;
  s.base = base_of(x.uop());
  auto st = tracker_of(x.uop());
  const bool plain = s.base->op != Op::Const && non_negative(st);
  if (!plain)
    if (auto through = storage_through_base(x)) return *through;
  if (plain) {
    s.plain = true;
    s.shape = shape_of(s.base);
    s.size = shape::prod(s.shape);
    s.offset = st.views[0].offset;
    s.elements = st;
    return s;
  }
  s.base = row_major(x.uop());
  s.size = x.numel();
  if (s.base->op == Op::View) {  // already a contiguous view of a realized buffer
    s.offset = tracker_of(s.base).views[0].offset;
    s.base = base_of(s.base);
    s.size = shape_of(s.base)[0];
  }
  s.shape = {s.size};
  s.elements = shape::ShapeTracker::from_shape({s.size}).shrink({{s.offset, s.offset + x.numel()}}).reshape(x.shape());
  return s;
}

// sum over every element of g into its flat storage index off + sum(i_d * stride_d):
// a scatter_add into a zero storage of n elements (O(numel(g) + n)).
Tensor scatter_add_strided(const Tensor &g, const std::vector<int64_t> &stride, int64_t off, int64_t n) {
  const Shape &size = g.shape();
  const int64_t k = g.ndim();
  Tensor idx = Tensor::full(Shape(k, 1), static_cast<long long>(off), DType::Int64);
  for (int64_t d = 0; d < k; d++) {
    Shape s(k, 1);
    s[d] = size[d];
    idx = idx.add(Tensor::arange(size[d]).mul(static_cast<long long>(stride[d])).reshape(s));
  }
  const int64_t m = g.numel();
  return Tensor::zeros({n}, g.dtype()).scatter_add(0, idx.expand(size).reshape({m}), g.reshape({m}));
}
}  // namespace

std::vector<int64_t> Tensor::strides() const {
  const StridedStorage st = strided_storage(*this);
  return st.plain ? st.elements.views[0].strides : shape::contiguous_strides(shape());
}

int64_t Tensor::storage_offset() const { return strided_storage(*this).offset; }

std::pair<std::optional<Tensor>, const void *> Tensor::storage_base() const {
  const auto &impl = TensorImpl::of(*this);
  if (impl->view_base) {
    const Tensor root = TensorImpl::wrap(impl->view_base);
    const StridedStorage mine = strided_storage(*this), theirs = strided_storage(root);
    // The root's value is its whole buffer, row-major, and this view lies in it.
    const bool whole = theirs.plain && theirs.offset == 0 && theirs.size == root.numel() &&
                       theirs.elements.views[0].strides == shape::contiguous_strides(root.shape());
    if (mine.plain && whole && mine.base == theirs.base) return {root, impl->view_base.get()};
  }
  return {std::nullopt, impl.get()};
}

Tensor Tensor::as_strided(const Shape &size, const std::vector<int64_t> &stride,
                          std::optional<int64_t> storage_offset) const {
  if (size.size() != stride.size())
    throw Error("as_strided: mismatch in length of strides and shape: size " + shape_str(size) + ", stride " +
                shape_str(stride));
  for (auto s : size)
    if (s < 0) throw Error("as_strided: negative size in " + shape_str(size));
  for (auto s : stride)
    if (s < 0)
      throw Error("as_strided: Negative strides are not supported at the moment, got strides: " + shape_str(stride));
  if (storage_offset && *storage_offset < 0)
    throw Error("as_strided: Tensor: invalid storage offset " + std::to_string(*storage_offset));
  StridedStorage st = strided_storage(*this);
  int64_t off = storage_offset ? *storage_offset : st.offset;
  // The last element's index + 1; past int64 is out of bounds too.
  int64_t need = 0;
  bool overflow = __builtin_add_overflow(off, 1, &need);
  bool empty = shape::prod(size) == 0;
  for (size_t i = 0; i < size.size() && !empty; i++) {
    int64_t span = 0;
    overflow |= __builtin_mul_overflow(size[i] - 1, stride[i], &span) || __builtin_add_overflow(need, span, &need);
  }
  if (!empty && (overflow || need > st.size))
    throw Error("as_strided: sizes " + shape_str(size) + ", strides " + shape_str(stride) + ", storage offset " +
                std::to_string(off) + " require a storage of " + (overflow ? "more than 2^63" : std::to_string(need)) +
                " elements, out of bounds for the storage of " + std::to_string(st.size) + " elements of " +
                describe(uop()));
  // Directly over the base: it may be a copy point (a VIEW), which view() would look through.
  Tensor out = make_tensor(
      UOp::make(Op::View, st.base->dtype, {st.base}, shape::ShapeTracker{{shape::View::create(size, stride, off)}}));
  // Backward: scatter-add into the storage (windows may overlap), then read
  // this tensor's elements back out of it.
  Tensor r = autograd::record(
      "AsStridedBackward", {*this}, out,
      [stride, off, st](const Tensor &g, const Tensor &) {
        Tensor storage = scatter_add_strided(g, stride, off, st.size);
        // Where this tensor's own elements overlap (a windowed view), each
        // storage element's gradient is shared evenly between its aliases, as torch does.
        if (st.elements.single_plain()) {
          const shape::View &v = st.elements.views[0];
          Tensor count = scatter_add_strided(Tensor::ones(v.shape, g.dtype()), v.strides, v.offset, st.size);
          storage = storage.div(count.maximum(Tensor::ones({}, g.dtype())));
        }
        storage = storage.reshape(st.shape);
        UOpRef forced = UOp::make(Op::Contiguous, storage.dtype(), {storage.uop()});
        return Grads{make_tensor(view(forced, st.elements))};
      },
      st.base == base_of(uop()) ? ViewReplay([=](const Tensor &t) { return t.as_strided(size, stride, off); })
                                : ViewReplay());
  if (TensorImpl::of(r)->view_base) TensorImpl::of(r)->view_addresses_storage = true;
  return r;
}

}  // namespace loom
