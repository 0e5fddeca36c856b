// The elements the emulated CUDA libraries (cublas_emulated.cpp,
// cudnn_emulated.cpp) read and write: float32, float16 or bfloat16, as
// float, rounded to nearest even when narrowed.
#pragma once
#include <cstdint>

#include "loom/dtype.h"
#include "loom/host.h"

namespace loom::runtime::cuda {

inline float load_float(const void *base, DType dt, int64_t i) {
  if (dt == DType::Float32) return static_cast<const float *>(base)[i];
  const uint16_t bits = static_cast<const uint16_t *>(base)[i];
  return dt == DType::Float16 ? half_bits_to_float(bits) : bf16_bits_to_float(bits);
}

inline void store_float(void *base, DType dt, int64_t i, float v) {
  if (dt == DType::Float32) {
    static_cast<float *>(base)[i] = v;
    return;
  }
  static_cast<uint16_t *>(base)[i] = dt == DType::Float16 ? float_to_half_bits(v) : float_to_bf16_bits(v);
}

// Element i becomes v + beta times its value: the libraries' result scaled
// by alpha (in v) added to beta times what was there, which is not read
// where beta is 0 (it may be garbage or NaN).
inline void store_blended(void *base, DType dt, int64_t i, float v, float beta) {
  store_float(base, dt, i, beta == 0 ? v : v + beta * load_float(base, dt, i));
}

}  // namespace loom::runtime::cuda
