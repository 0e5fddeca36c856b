// Tests: a tensor's elements as floats, whether LOOM_NOOPT turns the kernel
// optimizations off in this run, and how the kernels fold a sum of products.
#pragma once
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "engine/realize.h"
#include "knobs/knobs.h"
#include "loom/tensor.h"
#include "runtime/device.h"
#include "uop/graph.h"

namespace loom::testing {

inline std::vector<float> float_values(const Tensor &t) {
  const HostTensor h = t.to_host();
  std::vector<float> v;
  for (int64_t i = 0; i < h.numel(); i++) v.push_back(static_cast<float>(h.get(i)));
  return v;
}

// A 0-d constant written into its kernels' source, as 0, 1 and -1 are (a
// scalar operand is a runtime scalar, DESIGN 13, and leaves the kernel as it
// is): a kernel over a value no earlier run used is new to the kernel caches.
inline Tensor literal(double c, DType dt = DType::Float64) { return Tensor(uop::const_tensor(c, dt, {})); }

inline bool no_opt() { return knobs::noopt(); }

// Whether the default device's kernels fold a float sum of products with
// fused multiply-adds (codegen/mul_add.h), and acc + p * q as they fold it.
inline bool fused_multiply_add() { return runtime::default_device().target().fma && !no_opt(); }
inline float add_product(float acc, float p, float q, bool fused) { return fused ? std::fmaf(p, q, acc) : acc + p * q; }

// How many interleaved partials the default device's kernels split a float32
// sum along memory into (codegen/target.h's sum_lanes; 1 under LOOM_NOOPT).
inline int64_t sum_lanes() { return no_opt() ? 1 : runtime::default_device().target().sum_lanes; }

// Whether kernels run on the CPU device (not LOOM_DEVICE=CUDA or
// CUDA_EMULATOR): tests of its own machinery (OpenBLAS, the block pass, the
// buffer pool, LOOM_BEAM) skip elsewhere.
inline bool on_cpu() { return std::string(engine::device_name()) == "CPU"; }

}  // namespace loom::testing
