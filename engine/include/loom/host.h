// HostTensor: a strided view over host memory, the currency between loom,
// the libtorch reference and the tests. Strides are in elements and may be
// negative or zero; offset is the element index of logical element 0.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "loom/dtype.h"

namespace loom {

using Shape = std::vector<int64_t>;

struct HostTensor {
  DType dtype = DType::Float32;
  Shape shape;
  std::vector<int64_t> strides;
  int64_t offset = 0;
  std::shared_ptr<std::vector<uint8_t>> storage;  // itemsize(dtype) * storage_numel() bytes

  // A zero-filled row-major tensor.
  static HostTensor contiguous(DType dtype, const Shape &shape);
  // A zero-filled storage of `storage_numel` elements viewed as (shape, strides, offset); checked in bounds.
  static HostTensor strided(DType dtype, const Shape &shape, const std::vector<int64_t> &strides, int64_t offset,
                            int64_t storage_numel);

  int64_t numel() const;
  int64_t storage_numel() const;
  // Logical element i in row-major order over `shape`, converted to double / int64.
  double get(int64_t i) const;
  int64_t get_int(int64_t i) const;
  // Writes logical element i (converted from double, rounding like a C cast / round-to-nearest for halfs).
  void set(int64_t i, double v);
  // A row-major copy of the logical elements.
  HostTensor to_contiguous() const;
  std::string str(int64_t max_elems = 16) const;
};

std::string shape_str(const Shape &shape);  // "(2, 3)"; "()" for 0-d
int64_t shape_numel(const Shape &shape);
std::vector<int64_t> row_major_strides(const Shape &shape);  // size-0 dims count as 1

// float16 / bfloat16 bit conversions (round to nearest even).
uint16_t float_to_half_bits(float f);
float half_bits_to_float(uint16_t h);
uint16_t float_to_bf16_bits(float f);
float bf16_bits_to_float(uint16_t h);

}  // namespace loom
