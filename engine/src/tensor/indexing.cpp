// Indexing ops. gather, index_select, index, masked_select and embedding-style
// lookups are indexed loads (a GATHER node: O(output) loads, the address read
// from the index); scatter and scatter_add are indexed stores (a WRITE node:
// a copy of self, then O(index) stores). Lists of indices and index_put are
// in advanced_index.cpp. Index values are checked after realizing the index
// (torch checks them when its kernel runs); the kernel reads 0 for an index
// out of range, never outside memory.
#include <algorithm>
#include <cmath>
#include <functional>

#include "tensor/host_check.h"
#include "tensor/mask_positions.h"
#include "tensor/ops_util.h"
#include "tensor/record.h"

namespace loom {

using namespace tensor;

Tensor tensor::gather_along(const Tensor &x, int64_t axis, const Tensor &index) {
  return make_tensor(UOp::make(Op::Gather, x.dtype(), {x.uop(), index.cast(DType::Int64).uop()}, axis));
}

namespace {

Tensor narrow_to(const Tensor &t, const Shape &s) {
  std::vector<std::pair<int64_t, int64_t>> b;
  for (size_t d = 0; d < s.size(); d++) b.push_back({0, s[d]});
  return t.shrink(b);
}

// arange(n) shaped to sit on axis `axis` of a rank-`rank` tensor.
Tensor arange_on(int64_t n, int64_t axis, int64_t rank) {
  Shape s(static_cast<size_t>(rank), 1);
  s[static_cast<size_t>(axis)] = n;
  return Tensor::arange(n).reshape(s);
}

// Checks every value of `index` is in [lo, hi) (tensor/host_check.h); on a
// GPU a large index is checked by its least and greatest values.
void check_values(const Tensor &index, int64_t lo, int64_t hi, std::function<std::string(int64_t)> msg) {
  check_on_host(range_ends(index), [lo, hi, msg = std::move(msg)](const HostValues &h) {
    h.each_int([&](int64_t v) {
      if (v < lo || v >= hi) throw IndexError(msg(v));
    });
  });
}

void require_int64(const Tensor &index, const char *op) {
  if (index.dtype() != DType::Int64)
    throw Error(std::string(op) + "(): Expected dtype int64 for index, got " + dtype_name(index.dtype()));
}

struct Checked {
  Tensor x, index;  // both at least 1-d
  int64_t dim;
};

// Shared checks of gather / scatter: same rank, index no larger than self
// (and src) apart from dim, values in range.
Checked check_gather_like(const Tensor &self, int64_t dim, const Tensor &index, const Tensor *src, const char *op) {
  require_int64(index, op);
  Tensor x = self.ndim() == 0 ? self.reshape({1}) : self;
  Tensor ix = index.ndim() == 0 ? index.reshape({1}) : index;
  const int64_t d = wrap_dim(dim, x.ndim(), op);
  if (ix.ndim() != x.ndim())
    throw Error(std::string(op) + "(): Index tensor must have the same number of dimensions as " +
                (src ? "self tensor" : "input tensor") + "; got index " + describe(index.uop()) + " and " +
                describe(self.uop()));
  for (int64_t k = 0; k < x.ndim(); k++) {
    if (k != d && ix.shape()[k] > x.shape()[k])
      throw Error(std::string(op) + "(): Size does not match at dimension " + std::to_string(k) + " expected index " +
                  list_str(index.shape()) + " to be smaller than self " + list_str(self.shape()) +
                  " apart from dimension " + std::to_string(d));
    if (src && ix.shape()[k] > (src->ndim() == 0 ? 1 : src->shape()[k]))
      throw Error(std::string(op) + "(): Expected index " + list_str(index.shape()) +
                  " to be smaller than src " + list_str(src->shape()) + " at dimension " + std::to_string(k));
  }
  const int64_t n = x.shape()[d];
  check_values(ix, 0, n, [op, d, n](int64_t v) {
    return std::string(op) + "(): index " + std::to_string(v) + " is out of bounds for dimension " +
           std::to_string(d) + " with size " + std::to_string(n);
  });
  return {x, ix, d};
}

}  // namespace

Tensor Tensor::gather(int64_t dim, const Tensor &index) const {
  Checked c = check_gather_like(*this, dim, index, nullptr, "gather");
  const int64_t d = c.dim;
  Shape region = c.index.shape();  // the part of x the index can reach
  region[d] = c.x.shape()[d];
  // torch's gradient: the output's gradient added at the gathered places.
  // torch's indexing nodes save their index (their backward reads it): it is
  // checked at backward. gather's node saves its input too.
  return autograd::saves_inputs(autograd::apply(
      "GatherBackward", {*this}, [&] { return gather_along(narrow_to(c.x, region), d, c.index).reshape(index.shape()); },
      [d, ix = c.index, shape = shape()](const Tensor &g, const Tensor &) {
        const Shape s1 = shape.empty() ? Shape{1} : shape;
        return autograd::Grads{Tensor::zeros(s1, g.dtype()).scatter_add(d, ix, g.reshape(ix.shape())).reshape(shape)};
      }), {*this, index}, "GatherBackward0");
}

namespace {

// scatter / scatter_add: self with src's elements (the index's region of src)
// stored where the index says, in src's row-major order, so along dim the last
// duplicate wins (scatter) or every duplicate adds (scatter_add): O(index) stores.
Tensor scatter_impl(const Tensor &self, int64_t dim, const Tensor &index, const Tensor &src, bool add, const char *op) {
  if (src.dtype() != self.dtype())
    throw Error(std::string(op) + "(): Expected self.dtype to be equal to src.dtype; got " + dtype_name(self.dtype()) +
                " and " + dtype_name(src.dtype()));
  Checked c = check_gather_like(self, dim, index, &src, op);
  if (c.index.numel() == 0) return self.where(self, self);  // a copy: nothing is written
  Tensor s = narrow_to(src.ndim() == 0 ? src.reshape({1}) : src, c.index.shape());
  const std::optional<Op> acc = !add ? std::nullopt : std::optional<Op>(self.dtype() == DType::Bool ? Op::Or : Op::Add);
  uop::WriteArg w{shape::ShapeTracker::from_shape(c.x.shape()), c.dim, acc};
  return make_tensor(UOp::make(Op::Write, self.dtype(), {c.x.uop(), s.uop(), c.index.uop()}, w)).reshape(self.shape());
}

// src's gradient reads the output's gradient where each element went (every
// duplicate gets it), zero past the index's region.
autograd::BackwardFn scatter_backward(int64_t dim, const Tensor &index, const Tensor &src, bool add) {
  // src's gradient only where src requires one: scatter_add then needs the
  // index for nothing else (torch neither saves nor reads it).
  return [dim, index, src_shape = src.shape(), add, src_grad = src.requires_grad()](const Tensor &g, const Tensor &) {
    // scatter: self's gradient is zero where it was overwritten.
    Tensor to_self = add ? g : g.scatter(dim, index, Tensor::zeros(index.shape(), g.dtype()));
    if (!src_grad) return autograd::Grads{to_self, std::nullopt};
    Tensor to_src = g.gather(dim, index);
    std::vector<std::pair<int64_t, int64_t>> pad;
    for (size_t k = 0; k < src_shape.size() && k < to_src.shape().size(); ++k)
      pad.push_back({0, src_shape[k] - to_src.shape()[k]});
    if (!pad.empty()) to_src = to_src.pad(pad);
    return autograd::Grads{to_self, to_src};
  };
}

}  // namespace

Tensor Tensor::scatter(int64_t dim, const Tensor &index, const Tensor &src) const {
  return autograd::saves_inputs(autograd::apply("ScatterBackward", {*this, src},
                                                [&] { return scatter_impl(*this, dim, index, src, false, "scatter"); },
                                                scatter_backward(dim, index, src, false)),
                                {index}, "ScatterBackward0");
}

Tensor Tensor::scatter_add(int64_t dim, const Tensor &index, const Tensor &src) const {
  // torch's node saves the index only for src's gradient (self's is the
  // incoming gradient itself): an in-place change of it raises only then.
  const std::vector<Tensor> saved = src.requires_grad() ? std::vector<Tensor>{index} : std::vector<Tensor>{};
  return autograd::saves_inputs(autograd::apply("ScatterAddBackward", {*this, src},
                                                [&] { return scatter_impl(*this, dim, index, src, true, "scatter_add"); },
                                                scatter_backward(dim, index, src, true)),
                                saved, "ScatterAddBackward0");
}

namespace {

// index_select once its index is known to be in range: gathers along `dim`,
// with the gradient a scatter_add into zeros.
Tensor select_checked(const Tensor &self, int64_t dim, const Tensor &index) {
  const Tensor x = self.ndim() == 0 ? self.reshape({1}) : self;
  const int64_t d = wrap_dim(dim, x.ndim(), "index_select");
  const int64_t m = index.numel();
  // A 0-d self stays 0-d whatever the index's length (torch's CPU kernel does the same).
  if (self.ndim() == 0) return m == 0 ? Tensor::zeros({}, self.dtype()) : self.where(self, self);
  Shape out = x.shape();
  out[d] = m;
  Shape along(static_cast<size_t>(x.ndim()), 1);
  along[static_cast<size_t>(d)] = m;
  const Tensor ix = index.cast(DType::Int64).reshape(along).expand(out);  // a broadcast view: nothing copied
  return autograd::saves_inputs(
      autograd::apply("IndexSelectBackward", {self}, [&] { return gather_along(x, d, ix); },
                      [d, ix, shape = x.shape()](const Tensor &g, const Tensor &) {
                        return autograd::Grads{Tensor::zeros(shape, g.dtype()).scatter_add(d, ix, g)};
                      }),
      {index}, "IndexSelectBackward0");
}

}  // namespace

Tensor Tensor::index_select(int64_t dim, const Tensor &index) const {
  if (index.dtype() != DType::Int64 && index.dtype() != DType::Int32)
    throw Error(std::string("index_select(): Expected dtype int32/int64 for index; got ") + dtype_name(index.dtype()));
  if (index.ndim() > 1) throw IndexError("index_select(): Index is supposed to be a vector; got " + describe(index.uop()));
  const int64_t d = wrap_dim(dim, std::max<int64_t>(ndim(), 1), "index_select");
  const int64_t n = ndim() == 0 ? 1 : shape()[d];
  check_values(index, 0, n, [](int64_t) { return std::string("index_select(): index out of range in self"); });
  return select_checked(*this, dim, index);
}

namespace {

// x[:, ..., mask] with a bool mask over dims [d, d + mask.ndim()): those dims
// become one, holding the elements where the mask is true (a 0-d mask adds a
// dim of size 1 or 0). Realizes the mask to count them.
Tensor index_by_mask(const Tensor &x, int64_t dim, const Tensor &mask) {
  const int64_t k = mask.ndim();
  const int64_t d = wrap_dim(dim, x.ndim(), "index");
  if (d + k > x.ndim())
    throw IndexError("index(): too many indices for tensor of dimension " + std::to_string(x.ndim()) + " (mask " +
                     shape_str(mask.shape()) + " at dim " + std::to_string(dim) + ")");
  for (int64_t i = 0; i < k; i++)
    if (mask.shape()[i] != x.shape()[d + i])
      throw IndexError("index(): The shape of the mask " + list_str(mask.shape()) + " at index " + std::to_string(i) +
                       " does not match the shape of the indexed tensor " + list_str(x.shape()) + " at index " +
                       std::to_string(d + i));
  Tensor flat = k == 0 ? x.unsqueeze(d) : x.flatten(d, d + k - 1);
  const Tensor picks = mask_positions(mask, "index");
  Tensor r = select_checked(flat, d, picks);
  Dims x_dims;  // torch's layout: x's dims around the mask's, which become one batch dim
  for (int64_t i = 0; i < d; i++) x_dims.push_back(i);
  x_dims.push_back(-1);
  for (int64_t i = d + k; i < x.ndim(); i++) x_dims.push_back(i);
  // torch's mask coordinates: a column of nonzero()'s (n, k) result.
  const IndexLayout column{picks.shape(), {std::max<int64_t>(k, 1)}};
  return laid_out(r, index_result_order(x, x_dims, {column}, r.shape()), "IndexBackward0");
}

}  // namespace

Tensor Tensor::index(int64_t dim, const Tensor &idx) const {
  if (idx.dtype() == DType::Bool) return autograd::saves_inputs(index_by_mask(*this, dim, idx), {idx}, "IndexBackward0");
  if (is_float(idx.dtype()))
    throw IndexError(std::string("index(): tensors used as indices must be long, int or bool tensors; got ") +
                     dtype_name(idx.dtype()));
  if (ndim() == 0) throw IndexError("index(): too many indices for tensor of dimension 0");
  const int64_t d = wrap_dim(dim, ndim(), "index");
  const int64_t n = shape()[d];
  check_values(idx, -n, n, [d, n](int64_t v) {
    return "index " + std::to_string(v) + " is out of bounds for dimension " + std::to_string(d) + " with size " +
           std::to_string(n);
  });
  Tensor i64 = idx.cast(DType::Int64);
  Tensor wrapped = i64.lt(Tensor::zeros({}, DType::Int64)).where(i64.add(static_cast<long long>(n)), i64);
  Tensor flat = wrapped.reshape({idx.numel()});
  Shape out(shape().begin(), shape().begin() + d);
  out.insert(out.end(), idx.shape().begin(), idx.shape().end());
  out.insert(out.end(), shape().begin() + d + 1, shape().end());
  Dims x_dims;  // torch's layout: x's dims around d, idx's in its place
  for (int64_t i = 0; i < ndim(); i++)
    if (i != d) x_dims.push_back(i);
  x_dims.insert(x_dims.begin() + d, static_cast<size_t>(idx.ndim()), -1);
  const Dims order = index_result_order(*this, x_dims, {{idx.shape(), idx.strides()}}, out);
  return autograd::saves_inputs(laid_out(index_select(d, flat).reshape(out), order, "IndexBackward0"), {idx},
                                "IndexBackward0");
}

// torch 1.13 also takes integer masks of 0/1; floating masks are rejected (torch misreads them).
Tensor Tensor::masked_fill(const Tensor &mask, Scalar value) const {
  const bool empty = shape_numel(broadcast_shapes(shape(), mask.shape(), "masked_fill")) == 0;  // torch checks nothing then
  if (!empty && (is_float(mask.dtype())))
    throw Error(std::string("masked_fill: expected a bool or integer mask, got a mask with dtype ") +
                dtype_name(mask.dtype()));
  if (!empty && mask.dtype() != DType::Bool)  // torch 1.13 takes integer masks holding only 0/1 (needs their values)
    check_values(mask, 0, 2, [](int64_t) { return std::string("masked_fill: Mask tensor can take 0 and 1 values only"); });
  // torch converts the value with an overflow check.
  const double v = value.to_double();
  if (dtype() != DType::Bool && std::isfinite(v) && (v < dtype_lowest(dtype()) || v > dtype_highest(dtype())))
    throw Error("masked_fill: value " + value.str() + " cannot be converted to type " + dtype_name(dtype()) +
                " without overflow");
  RowMajorScope row_major;  // torch fills a row-major clone
  return mask.where(Tensor::full({}, value, dtype()), *this);
}

Tensor Tensor::masked_select(const Tensor &mask) const {
  if (mask.dtype() != DType::Bool && mask.dtype() != DType::UInt8)
    throw Error(std::string("masked_select: expected BoolTensor for mask, got ") + dtype_name(mask.dtype()));
  const Shape s = broadcast_shapes(shape(), mask.shape(), "masked_select");
  const Tensor picks = mask_positions(mask.expand(s), "masked_select");
  Tensor flat = expand(s).reshape({shape_numel(s)});
  // torch's node saves the input and the mask. The result is always a new
  // tensor (also when empty: a view would share the input's version).
  return autograd::saves_inputs(select_checked(flat, 0, picks), {*this, mask}, "MaskedSelectBackward0");
}

Tensor Tensor::one_hot(int64_t num_classes) const {
  if (dtype() != DType::Int64)
    throw Error(std::string("one_hot is only applicable to index tensor of dtype int64; got ") + dtype_name(dtype()));
  int64_t c = num_classes;
  if (numel() == 0) {
    if (c == -1) throw Error("one_hot: Can not infer total number of classes from empty tensor.");
  } else {
    const HostTensor h = to_host();
    int64_t lo = static_cast<int64_t>(h.get(0)), hi = lo;
    for (int64_t i = 0; i < h.numel(); i++) {
      lo = std::min(lo, static_cast<int64_t>(h.get(i)));
      hi = std::max(hi, static_cast<int64_t>(h.get(i)));
    }
    if (lo < 0) throw Error("one_hot: Class values must be non-negative.");
    if (c == -1) c = hi + 1;
    else if (hi >= c) throw Error("one_hot: Class values must be smaller than num_classes.");
  }
  if (c < 0) throw Error("one_hot: num_classes must be -1 or non-negative; got " + std::to_string(num_classes));
  RowMajorScope row_major;  // torch scatters into new zeros: row-major
  return unsqueeze(-1).eq(arange_on(c, ndim(), ndim() + 1)).cast(DType::Int64);
}

}  // namespace loom
