// The hlb-CIFAR10-like training step used by the step benchmark and the
// work test: a 2x2 whitening conv (3 -> 24), three groups of
// conv3x3 - maxpool2 - BatchNorm - GELU - conv3x3 - BatchNorm - GELU
// (widths 64, 256, 512), a global max pool, a linear layer, label-smoothed
// cross-entropy, and SGD with Nesterov momentum and weight decay written with
// assign. Inputs are 32x32 RGB images.
#pragma once
#include <cstdint>
#include <vector>

#include "loom/tensor.h"
#include "reference_hlb.h"  // reference/: the torch-free spec of the libtorch twin

namespace loom::bench {

struct HlbNet {
  std::vector<Tensor> params;    // conv weights, BatchNorm weights and biases, linear weight and bias
  std::vector<Tensor> momentum;  // one per param
  std::vector<Tensor> running;   // BatchNorm running mean and var, alternating
  std::vector<int64_t> widths;
  int64_t batch = 16;
};

// Deterministic initial weights (torch's default bounds) for `widths` (e.g. {64, 256, 512}).
HlbNet make_hlb_net(const std::vector<int64_t> &widths, int64_t batch, uint64_t seed);

// A step's host time (wall minus kernel time) by phase, in milliseconds.
struct HlbPhases {
  double forward = 0;         // building the forward graph and the loss
  double backward = 0;        // autograd::grad building the gradients' graph
  double realize_grads = 0;   // realizing them (and freeing the forward graph it leaves)
  double optimizer = 0;       // building the update's graph
  double realize_update = 0;  // realizing it
  double release = 0;         // dropping the gradients and their graph
};

// One training step on (x, y); returns the loss (realized). With `phases`,
// adds the step's host time by phase to it.
double hlb_step(HlbNet &net, const Tensor &x, const Tensor &y, HlbPhases *phases = nullptr);
// The same step, returning the loss as a realized 0-d tensor (no host read:
// the step can run under loom::Jit).
Tensor hlb_step_loss(HlbNet &net, const Tensor &x, const Tensor &y, HlbPhases *phases = nullptr);

// The benchmarks' setup: the 64/256/512 net (seed 7) and a batch of random
// images and labels (seed 11), with the spec that runs the same in libtorch.
// With `channels_last` the images are stored so (N, H, W, C), as
// hlb-CIFAR10 gives them; the parameters stay row-major.
struct HlbBench {
  HlbNet net;
  Tensor x, y;
  bool channels_last = false;
  reference::HlbSpec torch_spec(int steps, int threads) const;
};
HlbBench make_hlb_bench(int64_t batch, bool channels_last = false);

}  // namespace loom::bench
