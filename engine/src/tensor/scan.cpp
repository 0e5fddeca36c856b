// Scans and order: cumsum/cumprod as scans (one pass per line),
// sort/argsort/topk as a stable merge sort per line (a library kernel),
// max/min along a dim with indices.
// Values are re-read with gather, so their gradient goes to the chosen element
// only (as torch's does).
#include <algorithm>

#include "tensor/ops_util.h"
#include "tensor/record.h"

namespace loom {

using namespace tensor;

namespace {

// The running fold of x along d: one pass per line (a SCAN node).
Tensor scan_along(const Tensor &x, int64_t d, Op op) {
  return make_tensor(UOp::make(Op::Scan, x.dtype(), {x.uop()}, uop::ReduceArg{op, {d}}));
}

// Along d, the sum of t's elements at and after each position.
Tensor reversed_cumsum(const Tensor &t, int64_t d) { return t.flip({d}).cumsum(d).flip({d}); }

// torch's cumsum/cumprod: the running sum accumulates as torch's CPU kernel
// does (float32 in double, halves in float, integers in int64), one pass per
// line, rounded to the result dtype at each position.
Tensor scan(const Tensor &t, int64_t dim, bool mul, const char *op) {
  const int64_t d = wrap_dim(dim, std::max<int64_t>(t.ndim(), 1), op);
  const DType out = is_float(t.dtype()) ? t.dtype() : DType::Int64;
  const DType acc = out == DType::Float16 || out == DType::BFloat16 ? DType::Float32
                    : out == DType::Float32                         ? DType::Float64
                                                                    : out;
  const char *name = mul ? "CumprodBackward" : "CumsumBackward";
  // A 0-d or empty input: the value is the input's, the result a new tensor
  // (never the input's own handle, which a write into the result would reach).
  if (t.ndim() == 0 || t.numel() == 0) {
    Tensor r = autograd::record(name, {t}, make_tensor(t.cast(out).uop()),
                                [](const Tensor &g, const Tensor &) { return autograd::Grads{g}; });
    return mul ? autograd::saves_result(r) : r;
  }
  auto forward = [&] { return scan_along(t.cast(acc), d, mul ? Op::Mul : Op::Add).cast(out); };
  if (!mul)
    return autograd::apply("CumsumBackward", {t}, forward,
                           [d](const Tensor &g, const Tensor &) { return autograd::Grads{reversed_cumsum(g, d)}; });
  // torch's cumprod gradient: before a line's first zero, the reversed
  // cumulative sum of g * out divided by x; at the first zero, the same sum
  // over the products that skip it; after it, zero.
  return autograd::saves_result(autograd::apply("CumprodBackward", {t}, forward, [t, d](const Tensor &g, const Tensor &out) {
    const Tensor zero = Tensor::zeros({}, t.dtype()), one = Tensor::ones({}, t.dtype());
    const Tensor zeros_so_far = t.eq(zero).cumsum(d);
    const Tensor before = zeros_so_far.eq(Tensor::zeros({}, DType::Int64));
    const Tensor first_zero = t.eq(zero).logical_and(zeros_so_far.eq(Tensor::ones({}, DType::Int64)));
    const Tensor skip_it = first_zero.where(one, t).cumprod(d);
    const Tensor head = reversed_cumsum(g.mul(out), d).div(before.where(t, one));
    return autograd::Grads{before.where(head, first_zero.where(reversed_cumsum(g.mul(skip_it), d), zero))};
  }));
}

// Indices (int64, shape of t) that sort t along d stably: a merge sort per
// line, O(n log n).
Tensor sort_indices(const Tensor &t, int64_t d, bool descending) {
  const Tensor x = t.dtype() == DType::Bool ? t.cast(DType::UInt8) : t;
  return make_tensor(UOp::make(Op::Sort, DType::Int64, {row_major(x.uop())}, uop::ReduceArg{descending ? Op::Max : Op::Min, {d}}));
}

// The values and indices of t sorted along `dim`, row-major, or with
// `keep_layout` in the dense order of t's strides (torch's sort and argsort).
std::pair<Tensor, Tensor> sorted(const Tensor &t, int64_t dim, bool descending, const char *op, bool keep_layout) {
  if (t.ndim() == 0) {
    wrap_dim(dim, 1, op);
    return {t.where(t, t), Tensor::zeros({}, DType::Int64)};
  }
  const int64_t d = wrap_dim(dim, t.ndim(), op);
  if (t.shape()[d] == 0 || t.numel() == 0) return {t.where(t, t), Tensor::zeros(t.shape(), DType::Int64)};
  const Dims order = keep_layout ? iterator_order({t.strides()}, t.shape()) : Dims{};
  if (std::is_sorted(order.begin(), order.end())) {  // row-major
    Tensor idx = sort_indices(t, d, descending);
    return {t.gather(d, idx), idx};
  }
  const Dims inverse = inverse_permutation(order);
  // Sorted in the permuted order (the sort's and the gather's results are
  // stored row-major there) and viewed back.
  const Tensor tp = t.permute(order);
  const int64_t dp = inverse[static_cast<size_t>(d)];
  Tensor idx = sort_indices(tp, dp, descending);
  return {tp.gather(dp, idx).permute(inverse), idx.permute(inverse)};
}

std::pair<Tensor, Tensor> extreme(const Tensor &t, int64_t dim, bool keepdim, bool is_max) {
  const char *op = is_max ? "max" : "min";
  Tensor x = t.ndim() == 0 ? t.reshape({1}) : t;
  const int64_t d = wrap_dim(dim, x.ndim(), op);
  if (x.shape()[d] == 0)
    throw IndexError(std::string(op) + "(): Expected reduction dim " + std::to_string(d) +
                     " to have non-zero size; got " + describe(t.uop()));
  Tensor key = t.dtype() == DType::Bool ? x.cast(DType::UInt8) : x;
  Tensor idx = is_max ? key.argmax(d, true) : key.argmin(d, true);
  Tensor val = x.gather(d, idx);
  if (t.ndim() == 0) return {val.reshape({}), idx.reshape({})};
  if (keepdim) return {val, idx};
  return {val.squeeze({d}), idx.squeeze({d})};
}

}  // namespace

Tensor Tensor::cumsum(int64_t dim) const { return scan(*this, dim, false, "cumsum"); }
Tensor Tensor::cumprod(int64_t dim) const { return scan(*this, dim, true, "cumprod"); }

std::pair<Tensor, Tensor> Tensor::sort(int64_t dim, bool descending) const {
  return sorted(*this, dim, descending, "sort", true);
}

Tensor Tensor::argsort(int64_t dim, bool descending) const {
  return sorted(*this, dim, descending, "argsort", true).second;
}

std::pair<Tensor, Tensor> Tensor::topk(int64_t k, int64_t dim, bool largest, bool sorted_) const {
  (void)sorted_;  // an unsorted result may come in any order; this one is always sorted
  const int64_t d = wrap_dim(dim, std::max<int64_t>(ndim(), 1), "topk");
  const int64_t n = ndim() == 0 ? 1 : shape()[d];
  if (k < 0 || k > n) throw Error("topk(): selected index k out of range; k = " + std::to_string(k) + ", size " + std::to_string(n));
  if (dtype() == DType::Bool) {
    // torch has no bool kernel but copies a 0-d input without one.
    if (ndim() != 0) unsupported_dtype("topk", dtype());
    return {make_tensor(copy_point(uop())), Tensor::zeros({}, DType::Int64)};
  }
  auto [v, i] = sorted(*this, dim, largest, "topk", false);
  if (ndim() == 0 || k == n) return {v, i};
  std::vector<std::pair<int64_t, int64_t>> b;
  for (int64_t x = 0; x < ndim(); x++) b.push_back(x == d ? std::make_pair(int64_t{0}, k) : std::make_pair(int64_t{0}, shape()[x]));
  if (numel() == 0) return {v.shrink(b), i.shrink(b)};
  // torch's results are tensors of their own, row-major: the values gathered
  // at the first k indices, which are copied.
  const Tensor first = i.shrink(b);
  return {gather(d, first), make_tensor(copy_point(first.uop()))};
}

std::pair<Tensor, Tensor> Tensor::max(int64_t dim, bool keepdim) const { return extreme(*this, dim, keepdim, true); }
std::pair<Tensor, Tensor> Tensor::min(int64_t dim, bool keepdim) const { return extreme(*this, dim, keepdim, false); }

}  // namespace loom
