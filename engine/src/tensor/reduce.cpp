// Reductions: one REDUCE_AXIS node over the chosen axes (kept as size 1),
// then a reshape when keepdim is false.
#include <algorithm>

#include "tensor/ops_util.h"
#include "tensor/record.h"

namespace loom {

using namespace tensor;
using autograd::Grads;

namespace {

Dims normalize_dims(const Tensor &t, const Dims &dims, const char *op) {
  Dims out;
  out.reserve(dims.empty() ? static_cast<size_t>(t.ndim()) : dims.size());
  if (dims.empty()) {
    for (int64_t i = 0; i < t.ndim(); i++) out.push_back(i);
    return out;
  }
  for (auto d : dims) {
    int64_t w = wrap_dim(d, t.ndim(), op);
    if (std::find(out.begin(), out.end(), w) != out.end())
      throw Error(std::string(op) + ": dim " + std::to_string(w) + " appears multiple times in the list of dims");
    out.push_back(w);
  }
  if (t.ndim() == 0) out.clear();  // dim 0 / -1 of a 0-d tensor reduces nothing
  std::sort(out.begin(), out.end());
  return out;
}

// Gradient of a reduction, given the gradient and the result with the reduced dims kept.
Tensor reduce_backward(Op op, const Tensor &x, const Tensor &g, const Tensor &out) {
  const Shape &in = x.shape();
  if (op == Op::Add) return g.expand(in);
  Dims axes;  // the reduced dims of size > 1 (size-1 ones reduce nothing)
  for (int64_t d = 0; d < x.ndim(); d++)
    if (out.shape()[d] != in[d]) axes.push_back(d);
  if (op == Op::Max || op == Op::Min) {  // shared evenly between ties, as torch's amax/amin
    Tensor hit = x.eq(out.expand(in)).cast(g.dtype());
    Tensor count = axes.empty() ? hit : hit.sum(axes, true);
    return g.expand(in).mul(hit).div(count.expand(in));
  }
  // Mul: the product of the other elements. With no zero that is out / x; with
  // one zero only the zero's slot gets the product of the rest; with more, none.
  Tensor zero = x.eq(Tensor::zeros({}, x.dtype()));
  Tensor zeros = axes.empty() ? zero.cast(DType::Int64) : zero.sum(axes, true);
  Tensor rest = axes.empty() ? Tensor::ones(in, x.dtype()) : zero.where(Tensor::ones({}, x.dtype()), x).prod(axes, true);
  Tensor none = Tensor::zeros({}, x.dtype());
  Tensor one_zero = zeros.eq(Tensor::ones({}, DType::Int64));
  Tensor no_zero = zeros.eq(Tensor::zeros({}, DType::Int64));
  Tensor safe_x = zero.where(Tensor::ones({}, x.dtype()), x);
  Tensor other = zero.where(one_zero.where(rest, none), no_zero.where(out.expand(in).div(safe_x), none));
  return g.expand(in).mul(other);
}

Tensor reduce(const Tensor &t, Op op, const Dims &axes, bool keepdim) {
  // Over no dims (a 0-d input) the value is the input's, but the result is
  // still a new tensor, as torch's: never the input's own handle.
  const char *name = op == Op::Add ? "SumBackward" : op == Op::Mul ? "ProdBackward" : op == Op::Max ? "AmaxBackward" : "AminBackward";
  Tensor value = make_tensor(axes.empty() ? t.uop() : UOp::make(Op::ReduceAxis, t.dtype(), {t.uop()}, uop::ReduceArg{op, axes}));
  // torch's sum keeps only its input's shape, so changing the input in place
  // later is no error; prod, amax and amin save the input itself.
  const bool saves_input = op != Op::Add;
  Tensor r = autograd::record(name, {t}, value, [op, x = autograd::Saved(t, "ReduceBackward", saves_input)](const Tensor &g, const Tensor &out) {
    return Grads{reduce_backward(op, x.get(), g, out)};
  });
  if (op != Op::Add) autograd::saves_result(r);  // torch saves amax/amin/prod's result
  if (keepdim) return r;
  Shape s;
  for (int64_t i = 0; i < t.ndim(); i++)
    if (std::find(axes.begin(), axes.end(), i) == axes.end()) s.push_back(t.shape()[i]);
  return r.reshape(s);
}

void require_nonempty(const Tensor &t, const Dims &axes, const char *op) {
  for (auto a : axes)
    if (t.shape()[a] == 0)
      throw IndexError(std::string(op) + "(): Expected reduction dim " + std::to_string(a) +
                       " to have non-zero size; got " + describe(t.uop()));
}

DType accumulate_int64(DType d) { return is_float(d) ? d : DType::Int64; }

}  // namespace

Tensor Tensor::sum(const Dims &dims, bool keepdim) const {
  Dims axes = normalize_dims(*this, dims, "sum");
  return reduce(cast(accumulate_int64(dtype())), Op::Add, axes, keepdim);
}

Tensor Tensor::prod(const Dims &dims, bool keepdim) const {
  Dims axes = normalize_dims(*this, dims, "prod");
  return reduce(cast(accumulate_int64(dtype())), Op::Mul, axes, keepdim);
}

namespace tensor {
Tensor mean_of(const Tensor &x, const Dims &dims, bool keepdim) {
  if (!is_float(x.dtype()))
    throw TypeError(std::string("mean(): could not infer output dtype. Input dtype must be either a floating point or "
                                "complex dtype. Got: ") + dtype_name(x.dtype()));
  Dims axes = normalize_dims(x, dims, "mean");
  int64_t n = 1;
  for (auto a : axes) n *= x.shape()[a];
  bool half = x.dtype() == DType::Float16 || x.dtype() == DType::BFloat16;
  Tensor up = half ? x.cast(DType::Float32) : x;
  // n == 0 gives 0/0 = nan, as in torch.
  return reduce(up, Op::Add, axes, keepdim).div(static_cast<double>(n)).cast(x.dtype());
}
}  // namespace tensor

// torch's mean() (MeanBackward0) saves only the input's size: the gradient
// is g / n everywhere. mean(dim) (MeanBackward1) saves the input itself, so
// an in-place update of it before backward raises.
Tensor Tensor::mean() const {
  return autograd::apply(
      "MeanBackward0", {*this}, [&] { return mean_of(*this, {}, false); },
      [s = shape(), n = static_cast<double>(numel())](const Tensor &g, const Tensor &) {
        return autograd::Grads{g.expand(s).div(n)};
      });
}

Tensor Tensor::mean(const Dims &dims, bool keepdim) const {
  return autograd::saves_inputs(mean_of(*this, dims, keepdim), {*this}, "MeanBackward1");
}

Tensor Tensor::amax(const Dims &dims, bool keepdim) const {
  Dims axes = normalize_dims(*this, dims, "amax");
  require_nonempty(*this, axes, "amax");
  return reduce(*this, Op::Max, axes, keepdim);
}

Tensor Tensor::amin(const Dims &dims, bool keepdim) const {
  Dims axes = normalize_dims(*this, dims, "amin");
  require_nonempty(*this, axes, "amin");
  return reduce(*this, Op::Min, axes, keepdim);
}

namespace {
// torch.max(x) / torch.min(x): the gradient is shared evenly by the elements
// equal to the result (the NaN ones when it is NaN) and is exactly 0 elsewhere,
// even where the gradient is NaN or infinite: torch's evenly_distribute_backward
// puts it into zeros with index_put rather than multiplying by a 0/1 mask.
Tensor full_extreme(const Tensor &t, bool is_max) {
  const char *op = is_max ? "max" : "min";
  if (t.numel() == 0)
    throw Error(std::string(op) + "(): Expected reduction dim to be specified for input.numel() == 0. Specify the " +
                "reduction dim with the 'dim' argument; got " + describe(t.uop()));
  const char *name = is_max ? "MaxBackward" : "MinBackward";
  Tensor r = autograd::apply(
      name, {t}, [&] { return is_max ? t.amax() : t.amin(); },
      [x = autograd::Saved(t, name)](const Tensor &g, const Tensor &out) {
        const Tensor in = x.get();
        const Tensor hit = out.ne(out).where(in.ne(in), in.eq(out));
        const Tensor share = g.div(hit.sum().cast(g.dtype()));
        return Grads{hit.where(share, Tensor::zeros({}, g.dtype()))};
      });
  return autograd::saves_result(r);
}
}  // namespace

Tensor Tensor::max() const { return full_extreme(*this, true); }
Tensor Tensor::min() const { return full_extreme(*this, false); }

namespace {
// First index of the extreme value: NaN counts as the extreme, like torch.
// torch 1.13 has no bool kernel, but answers without one where none runs: a
// reduced dim of size 1 (all zeros) or an empty result; so does loom.
Tensor arg_extreme(const Tensor &t, std::optional<int64_t> dim, bool keepdim, bool is_max, const char *op) {
  if (!dim) {
    if (t.numel() == 0)
      throw Error(std::string(op) + "(): Expected reduction dim to be specified for input.numel() == 0; got " +
                  describe(t.uop()));
    if (t.dtype() == DType::Bool) unsupported_dtype(op, t.dtype());
    Tensor r = arg_extreme(t.reshape({-1}), 0, false, is_max, op);
    return keepdim ? r.reshape(Shape(t.ndim(), 1)) : r;
  }
  Tensor x = t.ndim() == 0 ? t.reshape({1}) : t;
  int64_t d = wrap_dim(*dim, t.ndim(), op);
  require_nonempty(x, {d}, op);
  if (t.dtype() == DType::Bool) {
    Shape out = x.shape();
    if (keepdim) out[d] = 1;
    else out.erase(out.begin() + d);
    if (t.ndim() == 0 || (x.shape()[d] != 1 && shape::prod(out) != 0)) unsupported_dtype(op, t.dtype());
    return Tensor::zeros(out, DType::Int64);
  }
  Tensor ext = is_max ? x.amax({d}, true) : x.amin({d}, true);
  Tensor hit = x.eq(ext);
  if (is_float(x.dtype())) hit = hit.logical_or(x.ne(x));
  int64_t n = x.shape()[d];
  Shape idx_shape(x.ndim(), 1);
  idx_shape[d] = n;
  Tensor rev = Tensor::arange(n, 0, -1).reshape(idx_shape);  // n, n-1, ..., 1: the first hit scores highest
  Tensor score = hit.where(rev, Tensor::full({}, 0, DType::Int64));
  Tensor r = Tensor::full({}, n, DType::Int64).sub(score.amax({d}, true));
  if (t.ndim() == 0) return r.reshape({});
  return keepdim ? r : r.reshape([&] {
    Shape s = x.shape();
    s.erase(s.begin() + d);
    return s;
  }());
}
}  // namespace

Tensor Tensor::argmax(std::optional<int64_t> dim, bool keepdim) const {
  return arg_extreme(*this, dim, keepdim, true, "argmax");
}
Tensor Tensor::argmin(std::optional<int64_t> dim, bool keepdim) const {
  return arg_extreme(*this, dim, keepdim, false, "argmin");
}

}  // namespace loom
