// loom dtypes and PyTorch's type promotion.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace loom {

enum class DType : uint8_t { Bool, UInt8, Int8, Int16, Int32, Int64, Float16, BFloat16, Float32, Float64 };

inline constexpr DType kAllDTypes[] = {DType::Bool,  DType::UInt8,   DType::Int8,     DType::Int16,   DType::Int32,
                                       DType::Int64, DType::Float16, DType::BFloat16, DType::Float32, DType::Float64};

size_t itemsize(DType dt);
const char *dtype_name(DType dt);  // "float32", "int64", ... as torch prints them without "torch."
bool is_float(DType dt);           // float16, bfloat16, float32, float64
bool is_int(DType dt);             // uint8..int64 (not bool)
bool is_unsigned(DType dt);        // bool, uint8
// The finite range dt holds (bool: [0, 1]; float64: +-DBL_MAX).
double dtype_lowest(DType dt);
double dtype_highest(DType dt);
// torch.promote_types for two tensors of the same "dimension category".
DType promote_types(DType a, DType b);

// A Python-like scalar: keeps its kind so `int_tensor + 2` stays integral and
// `int_tensor + 2.5` becomes float32, as in torch.
struct Scalar {
  enum class Kind : uint8_t { Bool, Int, Float } kind;
  double f = 0;
  int64_t i = 0;
  Scalar(bool v) : kind(Kind::Bool), f(v), i(v) {}
  Scalar(int v) : kind(Kind::Int), f(v), i(v) {}
  Scalar(long v) : kind(Kind::Int), f(static_cast<double>(v)), i(v) {}
  Scalar(long long v) : kind(Kind::Int), f(static_cast<double>(v)), i(v) {}
  Scalar(float v) : kind(Kind::Float), f(v), i(truncated(v)) {}
  Scalar(double v) : kind(Kind::Float), f(v), i(truncated(v)) {}
  double to_double() const { return kind == Kind::Float ? f : static_cast<double>(i); }
  std::string str() const;

 private:
  // The integer part where it fits in int64 (a cast outside that range, or of
  // NaN, is undefined); 0 elsewhere. Float scalars are read through f.
  static int64_t truncated(double v) {
    return v > -9223372036854775808.0 && v < 9223372036854775808.0 ? static_cast<int64_t>(v) : 0;
  }
};

// torch.result_type(tensor, scalar): the scalar only lifts the category.
DType result_type(DType tensor_dtype, const Scalar &s);

}  // namespace loom
