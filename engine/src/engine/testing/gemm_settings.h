// Tests: the GEMM split's settings (schedule/gemm.h) changed for a scope.
#pragma once
#include <cstdint>

#include "engine/realize.h"
#include "schedule/gemm.h"

namespace loom::testing {

// The smallest GEMM that splits (0: every GEMM-shaped kernel; INT64_MAX: none).
struct MinMacs {
  explicit MinMacs(int64_t macs) : was(schedule::set_gemm_min_macs(macs)) {}
  ~MinMacs() { schedule::set_gemm_min_macs(was); }
  MinMacs(const MinMacs &) = delete;
  MinMacs &operator=(const MinMacs &) = delete;
  int64_t was;
};

// Which GEMMs read a convolution's windows through their views (set after
// the device's rule, which a first realize would set over it).
struct GemmGathers {
  explicit GemmGathers(schedule::GatherRule rule) : was((engine::follow_device(), schedule::set_gemm_gathers(rule))) {}
  ~GemmGathers() { schedule::set_gemm_gathers(was); }
  GemmGathers(const GemmGathers &) = delete;
  GemmGathers &operator=(const GemmGathers &) = delete;
  schedule::GatherRule was;
};
inline const schedule::GatherRule kNoGathers{};

}  // namespace loom::testing
