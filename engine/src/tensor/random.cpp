// Counter-based random numbers (Philox-4x32-10): element i of a draw is a pure
// function of (seed, draw counter, i), so every device and the JIT agree.
#include <atomic>
#include <cmath>
#include <cstdint>
#include <functional>
#include <utility>

#include "engine/capture.h"
#include "loom/random.h"
#include "tensor/ops_util.h"

namespace loom {

using tensor::unsupported_dtype;

namespace {
std::atomic<uint64_t> g_seed{0x5eed};
std::atomic<uint64_t> g_counter{0};

void philox(uint32_t ctr[4], uint32_t key[2]) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u, kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  for (int round = 0; round < 10; round++) {
    uint64_t p0 = static_cast<uint64_t>(kM0) * ctr[0], p1 = static_cast<uint64_t>(kM1) * ctr[2];
    uint32_t n0 = static_cast<uint32_t>(p1 >> 32) ^ ctr[1] ^ key[0];
    uint32_t n2 = static_cast<uint32_t>(p0 >> 32) ^ ctr[3] ^ key[1];
    ctr[0] = n0;
    ctr[1] = static_cast<uint32_t>(p1);
    ctr[2] = n2;
    ctr[3] = static_cast<uint32_t>(p0);
    key[0] += kW0;
    key[1] += kW1;
  }
}

// Uniform values in [0, 1) with `bits` (at most 32) random bits each (the target type's
// mantissa precision, so rounding to it can never reach 1), 4 per Philox block.
std::vector<double> uniform(int64_t n, int bits = 24) {
  uint64_t seed = g_seed.load(), draw = g_counter.fetch_add(1);
  std::vector<double> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; i += 4) {
    uint32_t ctr[4] = {static_cast<uint32_t>(i / 4), static_cast<uint32_t>(static_cast<uint64_t>(i / 4) >> 32),
                       static_cast<uint32_t>(draw), static_cast<uint32_t>(draw >> 32)};
    uint32_t key[2] = {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)};
    philox(ctr, key);
    for (int j = 0; j < 4 && i + j < n; j++) out[i + j] = std::ldexp(static_cast<double>(ctr[j] >> (32 - bits)), -bits);
  }
  return out;
}

void check_float(DType dt, const char *op) {
  if (!is_float(dt)) throw TypeError(std::string(op) + ": expected a floating point dtype, got " + dtype_name(dt));
}

void check_dims(const Shape &shape, const char *op) {
  for (int64_t d : shape)
    if (d < 0) throw Error(std::string(op) + ": negative dimension in shape " + shape_str(shape));
}

HostTensor host_values(const std::vector<double> &v, const Shape &shape, DType dtype) {
  HostTensor h = HostTensor::contiguous(dtype, shape);
  for (size_t i = 0; i < v.size(); i++) h.set(static_cast<int64_t>(i), v[i]);
  return h;
}

// A tensor of values drawn now. Under a JIT capture each replay draws again
// (the generator's counter advances as an eager call's would) into the buffer
// the replay binds.
Tensor drawn(std::function<HostTensor()> draw) {
  Tensor t = Tensor::from_host(draw());
  const auto &buf = base_of(t.uop())->arg_as<uop::BufferArg>().buffer;
  engine::capture_refill(buf, [draw = std::move(draw)](uop::Buffer &b) {
    const HostTensor h = draw();
    engine::write_buffer(b, h.storage->data(), h.storage->size());
  });
  return t;
}
}  // namespace

void Tensor::manual_seed(uint64_t seed) { set_rng_state({seed, 0}); }

RngState rng_state() { return {g_seed.load(), g_counter.load()}; }

void set_rng_state(const RngState &state) {
  g_seed = state.seed;
  g_counter = state.draws;
}

Tensor Tensor::rand(const Shape &shape, DType dtype) {
  check_float(dtype, "rand");
  check_dims(shape, "rand");
  int bits = dtype == DType::Float16 ? 11 : dtype == DType::BFloat16 ? 8 : 24;
  return drawn([=] { return host_values(uniform(shape::prod(shape), bits), shape, dtype); });
}

Tensor Tensor::randn(const Shape &shape, DType dtype) {
  check_float(dtype, "randn");
  check_dims(shape, "randn");
  return drawn([=] {
    const int64_t n = shape::prod(shape);
    auto u = uniform(2 * n);
    std::vector<double> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; i++)  // Box-Muller; 1 - u keeps the log argument in (0, 1]
      v[i] = std::sqrt(-2.0 * std::log(1.0 - u[2 * i])) * std::cos(2.0 * M_PI * u[2 * i + 1]);
    return host_values(v, shape, dtype);
  });
}

namespace {
// The values an integer dtype (bool: 0 and 1) holds.
std::pair<int64_t, int64_t> integer_range(DType dt) {
  switch (dt) {
    case DType::Bool: return {0, 1};
    case DType::UInt8: return {0, 255};
    case DType::Int8: return {-128, 127};
    case DType::Int16: return {-32768, 32767};
    case DType::Int32: return {INT32_MIN, INT32_MAX};
    default: return {INT64_MIN, INT64_MAX};
  }
}

void check_bounds(int64_t low, int64_t high, DType dtype, const char *op) {
  if (low >= high)
    throw Error(std::string(op) + ": expects 'from' to be less than 'to', but got from=" + std::to_string(low) +
                " >= to=" + std::to_string(high));
  // torch's check_from_to_in_range: both ends of [low, high - 1] must fit the dtype.
  if (!is_float(dtype)) {
    const auto [min, max] = integer_range(dtype);
    if (low < min || low > max) throw Error(std::string(op) + ": from is out of bounds for " + dtype_name(dtype));
    if (high - 1 < min || high - 1 > max)
      throw Error(std::string(op) + ": to - 1 is out of bounds for " + dtype_name(dtype));
  }
}

std::vector<double> integers(int64_t n, int64_t low, int64_t high) {
  auto u = uniform(n, 32);
  std::vector<double> v(static_cast<size_t>(n));
  const double span = static_cast<double>(high) - static_cast<double>(low);
  for (int64_t i = 0; i < n; i++) v[i] = static_cast<double>(low) + std::floor(u[i] * span);
  return v;
}
}  // namespace

Tensor Tensor::randint(int64_t low, int64_t high, const Shape &shape, DType dtype) {
  check_dims(shape, "randint");
  check_bounds(low, high, dtype, "randint");
  return drawn([=] { return host_values(integers(shape::prod(shape), low, high), shape, dtype); });
}

namespace {
// torch converts n - 1 to the dtype (overflow raises), then bounds the
// floating types by the integers they hold exactly.
void check_randperm_range(int64_t n, DType dtype) {
  struct Limit {
    DType dtype;
    int64_t max;
    const char *ctype;
  };
  static constexpr Limit kLimits[] = {{DType::UInt8, 255, "uint8_t"},
                                      {DType::Int8, 127, "int8_t"},
                                      {DType::Int16, 32767, "int16_t"},
                                      {DType::Int32, 2147483647, "int"},
                                      {DType::Float16, 65504, "at::Half"}};
  for (const Limit &l : kLimits)
    if (l.dtype == dtype && n - 1 > l.max)
      throw Error(std::string("randperm: value cannot be converted to type ") + l.ctype + " without overflow");
  if (dtype == DType::Float16 && n > 2049) throw Error("randperm: n cannot be greater than 2049 for Half type.");
  if (dtype == DType::Float32 && n > (int64_t{1} << 24) + 1)
    throw Error("randperm: n cannot be greater than 2^24+1 for Float type.");
}
}  // namespace

Tensor Tensor::randperm(int64_t n, DType dtype) {
  if (n < 0) throw Error("randperm: n must be non-negative, got " + std::to_string(n));
  if (dtype == DType::Bool) unsupported_dtype("randperm", dtype);
  check_randperm_range(n, dtype);
  return drawn([=] {
    std::vector<double> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; i++) v[i] = static_cast<double>(i);
    auto u = uniform(n, 32);
    for (int64_t i = n - 1; i > 0; i--)  // Fisher-Yates
      std::swap(v[i], v[static_cast<int64_t>(u[i] * static_cast<double>(i + 1))]);
    return host_values(v, {n}, dtype);
  });
}

Tensor &Tensor::uniform_(double from, double to) {
  check_float(dtype(), "uniform_");
  if (!(from <= to))
    throw Error("uniform_: expects to return a [from, to) range, but found from=" + std::to_string(from) +
                " > to=" + std::to_string(to));
  // Drawn in float64 and rounded to the dtype; a value that rounds up to `to` becomes `from`.
  return assign(drawn([from, to, dtype = dtype(), shape = shape()] {
    HostTensor h = HostTensor::contiguous(dtype, shape);
    auto u = uniform(h.numel(), 32);
    for (int64_t i = 0; i < h.numel(); i++) {
      h.set(i, from + u[i] * (to - from));
      if (h.get(i) >= to && to > from) h.set(i, from);
    }
    return h;
  }));
}

Tensor &Tensor::normal_(double mean, double std) {
  check_float(dtype(), "normal_");
  if (std < 0) throw Error("normal_: expects std >= 0.0, but found std " + std::to_string(std));
  return assign(randn(shape(), DType::Float64).mul(std).add(mean));
}

Tensor &Tensor::random_(int64_t low, int64_t high) {
  check_bounds(low, high, dtype(), "random_");
  return assign(drawn([low, high, dtype = dtype(), shape = shape()] {
    return host_values(integers(shape::prod(shape), low, high), shape, dtype);
  }));
}

}  // namespace loom
