// The libtorch side of the hlb-like step benchmark (bench/hlb_step.h): the
// same net, loss and SGD (Nesterov momentum, weight decay) in libtorch, from
// the same initial parameters and batch. Torch-free header.
#pragma once
#include <vector>

#include "loom/host.h"

namespace loom::reference {

struct HlbSpec {
  std::vector<int64_t> widths;     // the three groups' widths
  std::vector<HostTensor> params;  // in bench::HlbNet's order, float32
  HostTensor x, y;                 // (N, 3, 32, 32) float32, (N,) int64
  int steps = 1;
  int threads = 0;  // libtorch's intra-op threads (0: leave as is)
  bool channels_last = false;  // x given to the net in channels_last (torch then keeps it through the net)
};
struct HlbResult {
  std::vector<double> losses, step_ms;  // per step
};
HlbResult train_hlb(const HlbSpec &spec);

}  // namespace loom::reference
