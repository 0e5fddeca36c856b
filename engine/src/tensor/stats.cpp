// Statistics from reductions: var/std with a correction (divisor N - correction,
// clamped at 0 like torch), std_mean, and cov over the rows of a 2-d input.
// Half types compute in float32 and round once.
#include <algorithm>
#include <cmath>

#include "tensor/ops_util.h"
#include "tensor/record.h"

namespace loom {

using namespace tensor;

namespace {

void require_float(const Tensor &t, const char *op) {
  if (!is_float(t.dtype()))
    throw Error(std::string(op) + "(): std and var only support floating point and complex dtypes; got " +
                dtype_name(t.dtype()));
}

DType compute_dtype(DType dt) { return dt == DType::Float16 || dt == DType::BFloat16 ? DType::Float32 : dt; }

// Elements reduced by `dims` (empty = all); throws on a bad dim like the reductions do.
int64_t reduced_count(const Tensor &t, const Dims &dims, const char *op) {
  if (dims.empty() || t.ndim() == 0) {
    for (int64_t d : dims) wrap_dim(d, std::max<int64_t>(t.ndim(), 1), op);
    return t.numel();
  }
  int64_t n = 1;
  std::vector<bool> seen(static_cast<size_t>(t.ndim()), false);
  for (int64_t d : dims) {
    const int64_t w = wrap_dim(d, t.ndim(), op);
    if (seen[static_cast<size_t>(w)])
      throw Error(std::string(op) + ": dim " + std::to_string(w) + " appears multiple times in the list of dims");
    seen[static_cast<size_t>(w)] = true;
    n *= t.shape()[w];
  }
  return n;
}

// Which dims of t `dims` reduces (empty = all).
std::vector<bool> reduced_dims(const Tensor &t, const Dims &dims, const char *op) {
  std::vector<bool> reduced(static_cast<size_t>(t.ndim()), dims.empty());
  for (int64_t d : dims) reduced[static_cast<size_t>(wrap_dim(d, t.ndim(), op))] = true;
  return reduced;
}

// torch's std_mean takes its mean from a running (Welford) update over each
// line in index order: once the running mean is infinite, the next element
// makes it NaN (inf - inf). So an infinity anywhere but in a line's last
// place gives NaN, where a plain mean gives +-inf. NaN there, 0 elsewhere,
// to add to the plain mean (no gradient: torch's mean gradient ignores it).
Tensor welford_infinity_nan(const Tensor &x, const Dims &dims, bool keepdim, const char *op) {
  autograd::NoGradGuard no_grad;
  const Tensor zero = Tensor::zeros({}, x.dtype());
  if (x.numel() == 0 || x.ndim() == 0) return zero;
  const std::vector<bool> reduced = reduced_dims(x, dims, op);
  Tensor last = Tensor::ones({}, DType::Bool);  // each line's last element
  for (int64_t d = 0; d < x.ndim(); d++) {
    if (!reduced[static_cast<size_t>(d)]) continue;
    Shape s(static_cast<size_t>(x.ndim()), 1);
    s[static_cast<size_t>(d)] = x.shape()[d];
    last = last.logical_and(Tensor::arange(x.shape()[d]).eq(Tensor::full({}, x.shape()[d] - 1)).reshape(s));
  }
  const Tensor early_inf = x.abs().eq(Tensor::full({}, INFINITY, x.dtype())).logical_and(last.logical_not());
  return early_inf.sum(dims, keepdim).gt(Tensor::zeros({}, DType::Int64)).where(Tensor::full({}, NAN, x.dtype()), zero);
}

// (variance, mean), both in the compute dtype, keepdim as asked.
std::pair<Tensor, Tensor> var_mean(const Tensor &t, const Dims &dims, int64_t correction, bool keepdim, const char *op) {
  require_float(t, op);
  const int64_t n = reduced_count(t, dims, op);
  Tensor x = t.cast(compute_dtype(t.dtype()));
  // Deviations from the first element of each group: equal elements then give an
  // exact 0 (as torch's Welford pass does), not the rounding error of their mean.
  Tensor shifted = x;
  if (t.numel() > 0 && t.ndim() > 0) {
    const std::vector<bool> reduced = reduced_dims(t, dims, op);
    std::vector<std::pair<int64_t, int64_t>> first;
    for (int64_t d = 0; d < t.ndim(); d++) first.push_back({0, reduced[static_cast<size_t>(d)] ? 1 : t.shape()[d]});
    shifted = x.sub(x.shrink(first).detach());
  }
  Tensor mean = mean_of(shifted, dims, true);
  Tensor dev = shifted.sub(mean);
  const double divisor = std::max<double>(0, static_cast<double>(n) - static_cast<double>(correction));
  Tensor var = dev.mul(dev).sum(dims, keepdim).div(divisor);
  return {var, mean_of(x, dims, keepdim)};
}

}  // namespace

Tensor Tensor::var(const Dims &dims, int64_t correction, bool keepdim) const {
  return autograd::saves_inputs(var_mean(*this, dims, correction, keepdim, "var").first.cast(dtype()), {*this},
                                "VarBackward0");
}

namespace {
// std with torch's backward, computed in the input's dtype as torch does (so half
// types round where torch's do): grad_var = grad / (2 std), 0 where std is 0, then
// (2 / dof) * grad_var * (x - mean).
Tensor std_of(const Tensor &t, const Dims &dims, int64_t correction, bool keepdim, const char *op) {
  auto [v, m] = var_mean(t, dims, correction, keepdim, op);
  (void)m;
  Dims axes;
  if (dims.empty() || t.ndim() == 0) {
    for (int64_t d = 0; d < t.ndim(); d++) axes.push_back(d);
  } else {
    for (int64_t d : dims) axes.push_back(wrap_dim(d, t.ndim(), op));
  }
  const double dof = std::max<double>(0, static_cast<double>(reduced_count(t, dims, op)) - static_cast<double>(correction));
  const Tensor value = v.sqrt().cast(t.dtype());
  return autograd::saves_result(autograd::apply(
      "StdBackward", {t}, [&] { return value; },
      [x = autograd::Saved(t, "StdBackward"), axes, keepdim, dof](const Tensor &g, const Tensor &out) {
        const Tensor in = x.get();
        Tensor zero = Tensor::zeros({}, out.dtype());
        Tensor gv = out.eq(zero).where(zero, g.div(out.mul(2.0)));
        if (!keepdim) {
          Shape kept = in.shape();
          for (int64_t a : axes) kept[static_cast<size_t>(a)] = 1;
          gv = gv.reshape(kept);
        }
        Tensor dev = in.sub(mean_of(in, axes, true));
        return autograd::Grads{gv.mul(2.0 / dof).mul(dev)};
      }));
}
}  // namespace

Tensor Tensor::std(const Dims &dims, int64_t correction, bool keepdim) const {
  return std_of(*this, dims, correction, keepdim, "std");
}

std::pair<Tensor, Tensor> Tensor::std_mean(const Dims &dims, int64_t correction, bool keepdim) const {
  auto [v, m] = var_mean(*this, dims, correction, keepdim, "std_mean");
  (void)v;
  // torch's one node for both results saves the input: an in-place change of
  // it raises at the mean's backward too.
  const Tensor mean = m.add(welford_infinity_nan(cast(m.dtype()), dims, keepdim, "std_mean"));
  return {std_of(*this, dims, correction, keepdim, "std_mean"),
          autograd::saves_inputs(mean.cast(dtype()), {*this}, "StdMeanBackward0")};
}

Tensor Tensor::cov(int64_t correction) const {
  if (ndim() > 2) throw Error("cov(): expected input to have two or fewer dimensions but got an input with " +
                              std::to_string(ndim()) + " dimensions");
  if (dtype() == DType::Bool) unsupported_dtype("cov", dtype());
  // torch.cov computes ints in the default float dtype.
  const DType out = is_float(dtype()) ? dtype() : DType::Float32;
  Tensor x = (ndim() < 2 ? reshape({1, -1}) : *this).cast(compute_dtype(out));
  const int64_t n = x.shape()[1];
  Tensor dev = x.sub(mean_of(x, {1}, true));
  const double divisor = std::max<double>(0, static_cast<double>(n) - static_cast<double>(correction));
  // c[a, b] = sum_k dev[a, k] * dev[b, k] / divisor
  Tensor c = dev.unsqueeze(1).mul(dev.unsqueeze(0)).sum({2}).div(divisor);
  // One variable (1-d input, or a single row) gives a 0-d result, like torch.
  return (x.shape()[0] == 1 ? c.reshape({}) : c).cast(out);
}

}  // namespace loom
