// batch_norm and layer_norm. Training batch_norm is one autograd node with
// torch's backward formula (its forward ops record nothing); layer_norm and
// evaluation-mode batch_norm are composites that autograd differentiates
// through.
#include <optional>

#include "loom/autograd.h"
#include "nn/nn_util.h"
#include "tensor/ops_util.h"
#include "tensor/record.h"

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

// What the training forward keeps for its backward: the batch's mean and
// 1 / sqrt(var + eps), in the input's compute dtype, shaped to broadcast.
struct BatchStats {
  Tensor mean, invstd;
};

struct BatchNormDims {
  Dims axes;     // every dim but the channel's
  Shape bshape;  // (1, C, 1, ...)
  int64_t count;  // elements per channel
  bool row_major;  // the input does not suggest channels_last
};

// y = x * alpha + beta as torch's CPU kernel computes it: one fused multiply-add
// (the exact product, one rounding of the sum), with alpha = invstd * weight
// and beta = bias - mean * alpha. The single rounding matters where
// |x * alpha| is far above |y|: a channel of (nearly) constant values, whose
// invstd is near 1 / sqrt(eps).
Tensor normalize(const Tensor &x, const Tensor &mean, const Tensor &invstd, const std::optional<Tensor> &weight,
                 const std::optional<Tensor> &bias, const Shape &bshape) {
  const Tensor alpha = weight ? invstd.mul(up(*weight).reshape(bshape)) : invstd;
  const Tensor shift = mean.mul(alpha);
  const Tensor beta = bias ? up(*bias).reshape(bshape).sub(shift) : shift.neg();
  return tensor::mul_add(x, alpha, beta);
}

// The batch's statistics (invstd computed in float64, then rounded, as torch
// saves it), with the running statistics updated in place.
BatchStats batch_stats(const Tensor &x, const std::optional<Tensor> &running_mean,
                       const std::optional<Tensor> &running_var, const BatchNormDims &d, double momentum, double eps) {
  autograd::NoGradGuard guard;
  const Tensor mean = refined_mean(x, d.axes);
  const Tensor centered = x.sub(mean);
  const Tensor var = mean_of(centered.mul(centered), d.axes, true);
  const int64_t c = d.bshape[1];
  if (running_mean) {
    Tensor rm = *running_mean;  // shares the caller's handle
    rm.assign(up(rm).mul(1 - momentum).add(mean.reshape({c}).mul(momentum)));
  }
  if (running_var) {
    const double unbiased = static_cast<double>(d.count) / static_cast<double>(d.count - 1);
    Tensor rv = *running_var;
    rv.assign(up(rv).mul(1 - momentum).add(var.reshape({c}).mul(unbiased).mul(momentum)));
  }
  return {mean, var.cast(DType::Float64).add(eps).rsqrt().cast(x.dtype())};
}

// torch's native_batch_norm_backward in training, from the saved mean and
// invstd: with sum = sum(dy) and dot = sum(dy * (x - mean)) over a channel,
// k = dot * invstd^2 / N and dx = (dy - sum / N - (x - mean) * k) * invstd * w;
// the weight's gradient is dot * invstd, the bias's sum.
autograd::Grads train_backward(const Tensor &g, const Tensor &input, const std::optional<Tensor> &weight,
                               bool has_bias, const BatchStats &s, const BatchNormDims &d) {
  std::optional<tensor::RowMajorScope> row_major;
  if (d.row_major) row_major.emplace();
  const Tensor dy = up(g), centered = up(input).sub(s.mean);
  const Tensor sum = dy.sum(d.axes, true), dot = dy.mul(centered).sum(d.axes, true);
  const auto n = static_cast<double>(d.count);
  const Tensor k = dot.mul(s.invstd).mul(s.invstd).div(n);
  Tensor dx = dy.sub(sum.div(n)).sub(centered.mul(k)).mul(s.invstd);
  if (weight) dx = dx.mul(up(*weight).reshape(d.bshape));
  autograd::Grads grads{dx};
  const int64_t c = d.bshape[1];
  if (weight) grads.emplace_back(dot.mul(s.invstd).reshape({c}));
  if (has_bias) grads.emplace_back(sum.reshape({c}));
  return grads;
}

Tensor batch_norm_train(const Tensor &input, const std::optional<Tensor> &running_mean,
                        const std::optional<Tensor> &running_var, const std::optional<Tensor> &weight,
                        const std::optional<Tensor> &bias, const BatchNormDims &d, double momentum, double eps) {
  constexpr const char *kNode = "NativeBatchNormBackward0";
  Tensor y;
  BatchStats stats;
  {
    autograd::NoGradGuard guard;
    const Tensor x = up(input);
    stats = batch_stats(x, running_mean, running_var, d, momentum, eps);
    y = normalize(x, stats.mean, stats.invstd, weight, bias, d.bshape).cast(input.dtype());
  }
  autograd::take_saved_count();  // the forward's own ops recorded nothing
  std::vector<Tensor> inputs{input};
  for (const auto *t : {&weight, &bias})
    if (*t) inputs.push_back(**t);
  // One node, as torch's: its rule reads the input and the weight as they
  // were (torch saves both) and the statistics computed here.
  auto w = weight ? std::optional<autograd::Saved>(std::in_place, *weight, kNode) : std::nullopt;
  return autograd::record(kNode, inputs, y,
                          [x = autograd::Saved(input, kNode), w = std::move(w), has_bias = bias.has_value(),
                           stats = std::move(stats), d](const Tensor &g, const Tensor &) {
                            const auto weight = w ? std::optional<Tensor>(w->get()) : std::nullopt;
                            return train_backward(g, x.get(), weight, has_bias, stats, d);
                          });
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
  BatchNormDims d{{0}, Shape(static_cast<size_t>(input.ndim()), 1), input.numel() / std::max<int64_t>(c, 1),
                  !tensor::suggests_channels_last(input.shape(), input.strides())};
  for (int64_t i = 2; i < input.ndim(); ++i) d.axes.push_back(i);
  d.bshape[1] = c;
  // torch's result keeps the input's suggested memory format: channels_last
  // stays so (the elementwise nodes follow the input), anything else is
  // row-major.
  std::optional<tensor::RowMajorScope> row_major;
  if (d.row_major) row_major.emplace();
  Tensor y;
  if (training) {
    if (d.count <= 1)
      throw ValueError("batch_norm: Expected more than 1 value per channel when training, got input size " +
                       shape_of(input));
    y = batch_norm_train(input, running_mean, running_var, weight, bias, d, momentum, eps);
  } else {
    // Running statistics are buffers: no gradient flows into them; invstd
    // comes from the running variance in x's dtype.
    const Tensor x = up(input);
    const Tensor mean = up(running_mean->detach()).reshape(d.bshape);
    const Tensor invstd = up(running_var->detach()).reshape(d.bshape).add(eps).rsqrt();
    y = normalize(x, mean, invstd, weight, bias, d.bshape).cast(input.dtype());
  }
  // torch's node saves the input, the weight and the running statistics (as
  // they are after this call's update), not the bias.
  std::vector<Tensor> saved{input};
  for (const auto *t : {&weight, &running_mean, &running_var})
    if (*t) saved.push_back(**t);
  return autograd::saves_inputs(y, saved, "NativeBatchNormBackward0");
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
