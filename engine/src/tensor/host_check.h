// Checks of a tensor's values on the host (indices in range, integer
// divisors nonzero, class targets valid): torch's kernels raise on such values
// as they run, loom reads them after realizing the tensor. Under a JIT capture
// the check is recorded and runs again on every replay with that call's values.
#pragma once
#include <climits>
#include <cstdint>
#include <functional>

#include "loom/host.h"
#include "loom/tensor.h"

namespace loom::tensor {

// A float as an integer as C truncates it; NaN and values past int64's range
// read as INT64_MIN.
inline int64_t truncated(double v) {
  return v >= -9.2233720368547758e18 && v < 9.2233720368547758e18 ? static_cast<int64_t>(v) : INT64_MIN;
}

// A realized tensor's values, row-major, as a check reads them: in place
// where the host can address the device's memory (the CPU), else a copy.
struct HostValues {
  DType dtype;
  int64_t numel;
  const void *data;
  // f(v) for each element in order, as an integer (floats truncated()); the
  // dtype is dispatched once.
  template <typename F>
  void each_int(F &&f) const {
    auto over = [&](const auto *p, auto &&as_int) {
      for (int64_t i = 0; i < numel; i++) f(as_int(p[i]));
    };
    auto id = [](auto v) { return static_cast<int64_t>(v); };
    auto half = [](uint16_t v) { return truncated(half_bits_to_float(v)); };
    auto bf16 = [](uint16_t v) { return truncated(bf16_bits_to_float(v)); };
    auto flt = [](auto v) { return truncated(static_cast<double>(v)); };
    switch (dtype) {
      case DType::Bool:
      case DType::UInt8: return over(static_cast<const uint8_t *>(data), id);
      case DType::Int8: return over(static_cast<const int8_t *>(data), id);
      case DType::Int16: return over(static_cast<const int16_t *>(data), id);
      case DType::Int32: return over(static_cast<const int32_t *>(data), id);
      case DType::Int64: return over(static_cast<const int64_t *>(data), id);
      case DType::Float16: return over(static_cast<const uint16_t *>(data), half);
      case DType::BFloat16: return over(static_cast<const uint16_t *>(data), bf16);
      case DType::Float32: return over(static_cast<const float *>(data), flt);
      case DType::Float64: return over(static_cast<const double *>(data), flt);
    }
  }
};

// Makes `t` (a row-major value) readable on the host: realized, unless it is a
// buffer already computed. A host read of a computed buffer is not a realize,
// so pending in-place updates (a training step's running statistics) wait for
// the step's next realize instead of splitting its graph in two.
void realize_for_host(Tensor &t);

// What a check of `t`'s range reads on the host: `t` itself where that is
// cheap (the device's memory is the host's, or `t` is small enough to have
// the host's copy of an upload), else, for an integer `t`, its least and
// greatest values folded on the device: two values cross to the host instead
// of the whole tensor. A range check of those raises on the least where it is
// below the range, else on the greatest.
Tensor range_ends(const Tensor &t);

// Runs `check` on the realized row-major values of `t` (throwing, if it
// throws). `check` is kept by a capture: it must own what it reads.
void check_on_host(const Tensor &t, std::function<void(const HostValues &)> check);

}  // namespace loom::tensor
