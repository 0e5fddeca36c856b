// batch_norm and layer_norm as composites (autograd differentiates the batch
// statistics too, as torch's formulas do).
#include <optional>

#include "autograd/impl.h"
#include "loom/autograd.h"
#include "nn/nn_util.h"
#include "tensor/ops_util.h"

namespace loom::nn {

using namespace detail;
using tensor::mean_of;

namespace {
void check_channel_vector(const std::optional<Tensor> &t, int64_t c, const char *what) {
  if (t && (t->ndim() != 1 || t->size(0) != c))
    throw Error(std::string("batch_norm: ") + what + " should contain " + std::to_string(c) + " elements, not " +
                std::to_string(t->numel()) + " (shape " + shape_of(*t) + ")");
}
// The mean, refined by the mean of the residuals: a constant row's mean is then
// exactly that constant (one rounded division alone misses it by an ulp, which
// rsqrt(var + eps) would blow up). The refinement's gradient is zero, so it is
// detached.
Tensor refined_mean(const Tensor &x, const Dims &axes) {
  Tensor m = mean_of(x, axes, true);
  return m.add(mean_of(x.sub(m), axes, true).detach());
}
}  // namespace

Tensor batch_norm(const Tensor &input, const std::optional<Tensor> &running_mean,
                  const std::optional<Tensor> &running_var, const std::optional<Tensor> &weight,
                  const std::optional<Tensor> &bias, bool training, double momentum, double eps) {
  if (input.ndim() < 2) throw ValueError("batch_norm: expected 2D or higher input, got " + shape_of(input));
  require_float(input, "batch_norm");
  const int64_t c = input.size(1);
  check_channel_vector(running_mean, c, "running_mean");
  check_channel_vector(running_var, c, "running_var");
  check_channel_vector(weight, c, "weight");
  check_channel_vector(bias, c, "bias");
  if (!training && (!running_mean || !running_var))
    throw Error("batch_norm: running_mean and running_var must be defined in evaluation mode");
  // torch's result keeps the input's suggested memory format: channels_last
  // stays so (the elementwise nodes follow the input), anything else is
  // row-major.
  std::optional<tensor::RowMajorScope> row_major;
  if (!tensor::suggests_channels_last(input.shape(), input.strides())) row_major.emplace();
  Dims axes = {0};
  for (int64_t d = 2; d < input.ndim(); ++d) axes.push_back(d);
  Shape bshape(static_cast<size_t>(input.ndim()), 1);
  bshape[1] = c;
  const int64_t count = input.numel() / std::max<int64_t>(c, 1);
  Tensor x = up(input);
  Tensor mean, var;
  if (training) {
    if (count <= 1)
      throw ValueError("batch_norm: Expected more than 1 value per channel when training, got input size " +
                       shape_of(input));
    mean = refined_mean(x, axes);
    Tensor centered = x.sub(mean);
    var = mean_of(centered.mul(centered), axes, true);
    if (running_mean || running_var) {
      autograd::NoGradGuard guard;
      Tensor m = mean.detach().reshape({c});
      Tensor v = var.detach().reshape({c}).mul(static_cast<double>(count) / static_cast<double>(count - 1));
      if (running_mean) {
        Tensor rm = *running_mean;  // shares the caller's handle
        rm.assign(up(rm).mul(1 - momentum).add(m.mul(momentum)));
      }
      if (running_var) {
        Tensor rv = *running_var;
        rv.assign(up(rv).mul(1 - momentum).add(v.mul(momentum)));
      }
    }
  } else {
    // Running statistics are buffers: no gradient flows into them.
    mean = up(running_mean->detach()).reshape(bshape);
    var = up(running_var->detach()).reshape(bshape);
  }
  // As torch's CPU kernel: y = x * alpha + beta, one fused multiply-add
  // (float32's exact product and one rounding of the sum, through float64),
  // with alpha = invstd * weight and beta = bias - mean * alpha; invstd =
  // 1 / sqrt(var + eps) is the saved statistic in training (computed in
  // float64, then rounded) and comes from the running variance in x's dtype
  // in evaluation. The same roundings matter where |x * alpha| is far above
  // |y|: a channel of (nearly) constant values, whose invstd is near
  // 1 / sqrt(eps).
  const Tensor invstd = training ? var.cast(DType::Float64).add(eps).rsqrt().cast(x.dtype()) : var.add(eps).rsqrt();
  const Tensor alpha = weight ? invstd.mul(up(*weight).reshape(bshape)) : invstd;
  const Tensor shift = mean.mul(alpha);
  const Tensor beta = bias ? up(*bias).reshape(bshape).sub(shift) : shift.neg();
  const DType wide = x.dtype() == DType::Float32 ? DType::Float64 : x.dtype();
  const Tensor y = x.cast(wide).mul(alpha.cast(wide)).add(beta.cast(wide)).cast(x.dtype());
  // torch's node saves the input, the weight and the running statistics (as
  // they are after this call's update), not the bias.
  std::vector<Tensor> saved{input};
  for (const auto *t : {&weight, &running_mean, &running_var})
    if (*t) saved.push_back(**t);
  return autograd::saves_inputs(y.cast(input.dtype()), saved, "NativeBatchNormBackward0");
}

Tensor layer_norm(const Tensor &input, const Shape &normalized_shape, const std::optional<Tensor> &weight,
                  const std::optional<Tensor> &bias, double eps) {
  const int64_t k = static_cast<int64_t>(normalized_shape.size());
  auto mismatch = [&] {
    return Error("layer_norm: Given normalized_shape=" + shape_str(normalized_shape) +
                 ", expected input with shape [*, " + shape_str(normalized_shape) + "], but got input of size" +
                 shape_of(input));
  };
  if (k == 0 || k > input.ndim()) throw mismatch();
  for (int64_t i = 0; i < k; ++i)
    if (input.size(input.ndim() - k + i) != normalized_shape[static_cast<size_t>(i)]) throw mismatch();
  for (const auto *t : {&weight, &bias})
    if (*t && (*t)->shape() != normalized_shape)
      throw Error("layer_norm: Expected " + std::string(t == &weight ? "weight" : "bias") + " to be of shape " +
                  shape_str(normalized_shape) + ", but got " + shape_of(**t));
  require_float(input, "layer_norm");
  tensor::RowMajorScope row_major;  // torch's kernel writes the result row-major
  Dims axes;
  for (int64_t d = input.ndim() - k; d < input.ndim(); ++d) axes.push_back(d);
  Tensor x = up(input);
  Tensor mean = refined_mean(x, axes);
  Tensor centered = x.sub(mean);
  Tensor var = mean_of(centered.mul(centered), axes, true);
  Tensor y = centered.mul(var.add(eps).rsqrt());
  if (weight) y = y.mul(up(*weight));
  if (bias) y = y.add(up(*bias));
  std::vector<Tensor> saved{input};  // torch's node saves the input, the weight and the bias
  for (const auto *t : {&weight, &bias})
    if (*t) saved.push_back(**t);
  return autograd::saves_inputs(y.cast(input.dtype()), saved, "NativeLayerNormBackward0");
}

}  // namespace loom::nn
