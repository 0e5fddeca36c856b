// Neural-network functions with torch.nn.functional's names, defaults and
// errors. All are composites of Tensor ops (autograd differentiates them),
// except where torch's gradient differs from the composite's (max pooling
// ties). float16/bfloat16 inputs compute in float32 and round once.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "loom/tensor.h"

namespace loom::nn {

// An (h, w) pair; a single int means both, like torch's `_pair`.
struct Pair2 {
  int64_t h, w;
  Pair2(int64_t v) : h(v), w(v) {}  // NOLINT: implicit like torch's int-or-tuple
  Pair2(int64_t h_, int64_t w_) : h(h_), w(w_) {}
};

// conv2d padding: an int, an (h, w) pair, or "same" / "valid".
struct Padding2 {
  std::string mode;  // "" (explicit sizes), "same" or "valid"
  Pair2 size{0};
  // A template so a literal 0 is an int here, not a null `const char *`.
  template <typename I, std::enable_if_t<std::is_integral_v<I>, int> = 0>
  Padding2(I v) : size(static_cast<int64_t>(v)) {}  // NOLINT
  Padding2(int64_t h, int64_t w) : size(h, w) {}
  Padding2(Pair2 p) : size(p) {}        // NOLINT
  Padding2(const char *m) : mode(m) {}  // NOLINT
};

// ---- linear algebra
// y = x @ w^T + b; x (*, in), w (out, in) or (in), b (out). linear and conv2d
// take integer dtypes as torch does: an integer result, wrapping as it wraps.
Tensor linear(const Tensor &x, const Tensor &weight, const std::optional<Tensor> &bias = std::nullopt);

// ---- convolution and pooling; input (N, C, H, W) or unbatched (C, H, W)
Tensor conv2d(const Tensor &input, const Tensor &weight, const std::optional<Tensor> &bias = std::nullopt,
              Pair2 stride = 1, Padding2 padding = 0, Pair2 dilation = 1, int64_t groups = 1);
// Pools take torch's arguments in torch's order. stride defaults to the kernel
// size; padding is at most half the kernel; ceil_mode rounds the output size up
// but drops a last window that would start in the right padding.
// max_pool2d: padding never wins; the gradient goes to the first maximum of
// each window or, where the window holds NaN, to its last NaN, as torch's.
Tensor max_pool2d(const Tensor &input, Pair2 kernel_size, std::optional<Pair2> stride = std::nullopt,
                  Pair2 padding = 0, Pair2 dilation = 1, bool ceil_mode = false);
// Each window's sum is divided by divisor_override (nonzero) when given, else
// by the window clipped to the padded input (count_include_pad) or to the
// input (!count_include_pad); in ceil_mode the last windows may be clipped.
// int64 input: an int64 sum divided toward zero, as torch's int64 kernel does.
Tensor avg_pool2d(const Tensor &input, Pair2 kernel_size, std::optional<Pair2> stride = std::nullopt,
                  Pair2 padding = 0, bool ceil_mode = false, bool count_include_pad = true,
                  std::optional<int64_t> divisor_override = std::nullopt);
// Window i of n outputs over length L spans [floor(i*L/n), ceil((i+1)*L/n)).
Tensor adaptive_avg_pool2d(const Tensor &input, Pair2 output_size);

// ---- normalization
// input (N, C, *). training: normalizes with the batch statistics and, when
// given, updates running_mean/running_var in place (Tensor::assign) with
// running = (1 - momentum) * running + momentum * batch_stat (unbiased batch
// variance). Eval: normalizes with the running statistics.
Tensor batch_norm(const Tensor &input, const std::optional<Tensor> &running_mean,
                  const std::optional<Tensor> &running_var, const std::optional<Tensor> &weight = std::nullopt,
                  const std::optional<Tensor> &bias = std::nullopt, bool training = false, double momentum = 0.1,
                  double eps = 1e-5);
Tensor layer_norm(const Tensor &input, const Shape &normalized_shape, const std::optional<Tensor> &weight = std::nullopt,
                  const std::optional<Tensor> &bias = std::nullopt, double eps = 1e-5);

// ---- activations
Tensor softmax(const Tensor &x, int64_t dim);
Tensor log_softmax(const Tensor &x, int64_t dim);
Tensor silu(const Tensor &x);
Tensor leaky_relu(const Tensor &x, double negative_slope = 0.01);
Tensor elu(const Tensor &x, double alpha = 1.0);
Tensor softplus(const Tensor &x, double beta = 1.0, double threshold = 20.0);
Tensor hardtanh(const Tensor &x, double min_val = -1.0, double max_val = 1.0);
// Zeroes each element with probability p and scales the rest by 1/(1-p);
// identity when !training. Draws from Tensor::rand (seed with manual_seed).
Tensor dropout(const Tensor &x, double p = 0.5, bool training = true);

// ---- losses; reduction "none", "mean" or "sum"
// input (C), (N, C) or (N, C, d1, ...). target: int64 class indices (input's
// shape without C; ignore_index entries count for nothing) or float class
// probabilities (input's shape).
Tensor cross_entropy(const Tensor &input, const Tensor &target, const std::optional<Tensor> &weight = std::nullopt,
                     const std::string &reduction = "mean", double label_smoothing = 0.0,
                     int64_t ignore_index = -100);
Tensor nll_loss(const Tensor &input, const Tensor &target, const std::optional<Tensor> &weight = std::nullopt,
                const std::string &reduction = "mean", int64_t ignore_index = -100);
Tensor mse_loss(const Tensor &input, const Tensor &target, const std::string &reduction = "mean");
Tensor binary_cross_entropy_with_logits(const Tensor &input, const Tensor &target,
                                        const std::optional<Tensor> &weight = std::nullopt,
                                        const std::string &reduction = "mean",
                                        const std::optional<Tensor> &pos_weight = std::nullopt);

}  // namespace loom::nn
