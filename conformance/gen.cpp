#include "gen.h"

#include <cmath>
#include <limits>

namespace loom::conformance {
namespace {

std::pair<double, double> int_range(DType dt) {
  switch (dt) {
    case DType::Bool: return {0, 1};
    case DType::UInt8: return {0, 255};
    case DType::Int8: return {-128, 127};
    case DType::Int16: return {-32768, 32767};
    case DType::Int32: return {-2147483648.0, 2147483647.0};
    default: return {-9.0e15, 9.0e15};
  }
}

// What storing v in dt gives back, so min_abs is checked on the stored value.
double rounded(DType dt, double v) {
  if (dt == DType::Float16) return half_bits_to_float(float_to_half_bits(static_cast<float>(v)));
  if (dt == DType::BFloat16) return bf16_bits_to_float(float_to_bf16_bits(static_cast<float>(v)));
  if (dt == DType::Float32) return static_cast<float>(v);
  return v;
}

}  // namespace

double draw_value(DType dt, const Domain &d, Rng &rng) {
  if (dt == DType::Bool) return rng.coin(d.zero_prob > 0 ? 1 - d.zero_prob : 0.5) ? 1 : 0;
  for (int attempt = 0; attempt < 100; ++attempt) {
    double v;
    if (!is_float(dt)) {
      const auto [tlo, thi] = int_range(dt);
      const int64_t lo = static_cast<int64_t>(std::ceil(std::max(d.lo, tlo)));
      const int64_t hi = static_cast<int64_t>(std::floor(std::min(d.hi, thi)));
      v = static_cast<double>(rng.uniform(lo, std::max(lo, hi)));
    } else if (d.grid > 0) {
      const int64_t steps = static_cast<int64_t>(std::floor((d.hi - d.lo) / d.grid));
      v = d.lo + d.grid * static_cast<double>(rng.uniform(0, steps));
    } else {
      v = rounded(dt, rng.real(d.lo, d.hi));
    }
    if (d.zero_prob > 0 && d.lo <= 0 && d.hi >= 0 && rng.coin(d.zero_prob)) v = 0;
    if (std::fabs(v) >= d.min_abs) return v;
  }
  return d.hi;  // the domain is almost all inside min_abs; hi is outside it by construction
}

void fill_storage(HostTensor &h, const Domain &d, Rng &rng) {
  HostTensor flat = h;
  flat.shape = {h.storage_numel()};
  flat.strides = {1};
  flat.offset = 0;
  for (int64_t i = 0; i < flat.shape[0]; ++i) flat.set(i, draw_value(h.dtype, d, rng));
}

}  // namespace loom::conformance
