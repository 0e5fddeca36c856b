// Tests: a tensor's elements as floats, and whether LOOM_NOOPT turns the
// kernel optimizations off in this run.
#pragma once
#include <cstdlib>
#include <string>
#include <vector>

#include "engine/realize.h"
#include "loom/tensor.h"

namespace loom::testing {

inline std::vector<float> float_values(const Tensor &t) {
  const HostTensor h = t.to_host();
  std::vector<float> v;
  for (int64_t i = 0; i < h.numel(); i++) v.push_back(static_cast<float>(h.get(i)));
  return v;
}

inline bool no_opt() {
  const char *e = std::getenv("LOOM_NOOPT");
  return e && std::atoi(e) != 0;
}

// Whether kernels run on the CPU device (not LOOM_DEVICE=CUDA or
// CUDA_EMULATOR): tests of its own machinery (OpenBLAS, the block pass, the
// buffer pool, LOOM_BEAM) skip elsewhere.
inline bool on_cpu() { return std::string(engine::device_name()) == "CPU"; }

}  // namespace loom::testing
