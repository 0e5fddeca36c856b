#include "loom/host.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>

#include "loom/error.h"

namespace loom {

uint16_t float_to_half_bits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t absx = x & 0x7fffffffu;
  if (absx >= 0x7f800000u) return static_cast<uint16_t>(sign | (absx > 0x7f800000u ? 0x7e00u : 0x7c00u));
  if (absx >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to >= 65520: inf
  if (absx < 0x38800000u) {  // subnormal half (or zero): add 0.5 to shift mantissa, let the FPU round
    float af;
    std::memcpy(&af, &absx, 4);
    float r = af + 0.5f;
    uint32_t rb;
    std::memcpy(&rb, &r, 4);
    return static_cast<uint16_t>(sign | (rb - 0x3f000000u));
  }
  uint32_t mant_odd = (absx >> 13) & 1u;
  absx += 0xc8000fffu + mant_odd;  // rebias exponent (-112 << 23) and round to nearest even
  return static_cast<uint16_t>(sign | (absx >> 13));
}

float half_bits_to_float(uint16_t h) {
  uint32_t sign = (h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  float f;
  if (exp == 0) {
    f = std::ldexp(static_cast<float>(mant), -24);
    uint32_t b;
    std::memcpy(&b, &f, 4);
    b |= sign;
    std::memcpy(&f, &b, 4);
    return f;
  }
  uint32_t bits = exp == 31 ? (sign | 0x7f800000u | (mant << 13)) : (sign | ((exp + 112) << 23) | (mant << 13));
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t float_to_bf16_bits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet NaN
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}

float bf16_bits_to_float(uint16_t h) {
  uint32_t x = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

std::string shape_str(const Shape &shape) {
  std::ostringstream os;
  os << "(";
  for (size_t i = 0; i < shape.size(); i++) os << (i ? ", " : "") << shape[i];
  if (shape.size() == 1) os << ",";
  os << ")";
  return os.str();
}

int64_t shape_numel(const Shape &s) {
  int64_t n = 1;
  bool overflow = false;  // an error only where no dim is 0
  for (auto d : s) {
    if (d == 0) return 0;
    overflow |= __builtin_mul_overflow(n, d, &n);
  }
  if (overflow) throw Error("Storage size calculation overflowed with sizes " + shape_str(s) + " (more than 2^63 elements)");
  return n;
}

std::vector<int64_t> row_major_strides(const Shape &s) {
  std::vector<int64_t> st(s.size());
  int64_t acc = 1;
  for (size_t i = s.size(); i-- > 0;) {
    st[i] = acc;
    // Wraps like torch's strides for an empty tensor with huge dims, without UB.
    acc = static_cast<int64_t>(static_cast<uint64_t>(acc) * static_cast<uint64_t>(std::max<int64_t>(s[i], 1)));
  }
  return st;
}

HostTensor HostTensor::contiguous(DType dtype, const Shape &shape) {
  return strided(dtype, shape, row_major_strides(shape), 0, shape_numel(shape));
}

HostTensor HostTensor::strided(DType dtype, const Shape &shape, const std::vector<int64_t> &strides, int64_t offset,
                               int64_t storage_numel) {
  if (shape.size() != strides.size())
    throw Error("HostTensor: shape " + shape_str(shape) + " and strides " + shape_str(strides) + " differ in rank");
  HostTensor t;
  t.dtype = dtype;
  t.shape = shape;
  t.strides = strides;
  t.offset = offset;
  t.storage = std::make_shared<std::vector<uint8_t>>(static_cast<size_t>(storage_numel) * itemsize(dtype));
  if (t.numel() > 0) {
    int64_t lo = offset, hi = offset;
    for (size_t i = 0; i < shape.size(); i++) (strides[i] < 0 ? lo : hi) += (shape[i] - 1) * strides[i];
    if (lo < 0 || hi >= storage_numel)
      throw Error("HostTensor: view " + shape_str(shape) + " strides " + shape_str(strides) + " offset " +
                  std::to_string(offset) + " exceeds a storage of " + std::to_string(storage_numel) + " elements");
  }
  return t;
}

int64_t HostTensor::numel() const { return shape_numel(shape); }
int64_t HostTensor::storage_numel() const {
  return storage ? static_cast<int64_t>(storage->size() / itemsize(dtype)) : 0;
}

namespace {
int64_t element_index(const HostTensor &t, int64_t i) {
  int64_t idx = t.offset;
  for (size_t d = t.shape.size(); d-- > 0;) {
    idx += (i % t.shape[d]) * t.strides[d];
    i /= t.shape[d];
  }
  return idx;
}
template <typename T>
T load(const uint8_t *p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}
template <typename T>
void store(uint8_t *p, T v) {
  std::memcpy(p, &v, sizeof(T));
}
}  // namespace

double HostTensor::get(int64_t i) const {
  const uint8_t *p = storage->data() + element_index(*this, i) * itemsize(dtype);
  switch (dtype) {
    case DType::Bool: return load<uint8_t>(p) != 0;
    case DType::UInt8: return load<uint8_t>(p);
    case DType::Int8: return load<int8_t>(p);
    case DType::Int16: return load<int16_t>(p);
    case DType::Int32: return load<int32_t>(p);
    case DType::Int64: return static_cast<double>(load<int64_t>(p));
    case DType::Float16: return half_bits_to_float(load<uint16_t>(p));
    case DType::BFloat16: return bf16_bits_to_float(load<uint16_t>(p));
    case DType::Float32: return load<float>(p);
    case DType::Float64: return load<double>(p);
  }
  return 0;
}

int64_t HostTensor::get_int(int64_t i) const {
  if (dtype == DType::Int64) return load<int64_t>(storage->data() + element_index(*this, i) * 8);
  return static_cast<int64_t>(get(i));
}

void HostTensor::set(int64_t i, double v) {
  uint8_t *p = storage->data() + element_index(*this, i) * itemsize(dtype);
  switch (dtype) {
    case DType::Bool: store<uint8_t>(p, v != 0); break;
    case DType::UInt8: store<uint8_t>(p, static_cast<uint8_t>(static_cast<int64_t>(v))); break;
    case DType::Int8: store<int8_t>(p, static_cast<int8_t>(static_cast<int64_t>(v))); break;
    case DType::Int16: store<int16_t>(p, static_cast<int16_t>(static_cast<int64_t>(v))); break;
    case DType::Int32: store<int32_t>(p, static_cast<int32_t>(static_cast<int64_t>(v))); break;
    case DType::Int64: store<int64_t>(p, static_cast<int64_t>(v)); break;
    case DType::Float16: store<uint16_t>(p, float_to_half_bits(static_cast<float>(v))); break;
    case DType::BFloat16: store<uint16_t>(p, float_to_bf16_bits(static_cast<float>(v))); break;
    case DType::Float32: store<float>(p, static_cast<float>(v)); break;
    case DType::Float64: store<double>(p, v); break;
  }
}

HostTensor HostTensor::to_contiguous() const {
  HostTensor out = contiguous(dtype, shape);
  size_t is = itemsize(dtype);
  for (int64_t i = 0, n = numel(); i < n; i++)
    std::memcpy(out.storage->data() + i * is, storage->data() + element_index(*this, i) * is, is);
  return out;
}

std::string HostTensor::str(int64_t max_elems) const {
  std::ostringstream os;
  os << "HostTensor(shape=" << shape_str(shape) << ", dtype=" << dtype_name(dtype) << ", values=[";
  for (int64_t i = 0, n = numel(); i < n && i < max_elems; i++) os << (i ? ", " : "") << get(i);
  if (numel() > max_elems) os << ", ...";
  os << "])";
  return os.str();
}

}  // namespace loom
