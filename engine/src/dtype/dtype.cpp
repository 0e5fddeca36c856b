#include "loom/dtype.h"

#include <limits>
#include <sstream>

#include "loom/error.h"

namespace loom {

size_t itemsize(DType dt) {
  switch (dt) {
    case DType::Bool: case DType::UInt8: case DType::Int8: return 1;
    case DType::Int16: case DType::Float16: case DType::BFloat16: return 2;
    case DType::Int32: case DType::Float32: return 4;
    case DType::Int64: case DType::Float64: return 8;
  }
  return 0;
}

const char *dtype_name(DType dt) {
  switch (dt) {
    case DType::Bool: return "bool";
    case DType::UInt8: return "uint8";
    case DType::Int8: return "int8";
    case DType::Int16: return "int16";
    case DType::Int32: return "int32";
    case DType::Int64: return "int64";
    case DType::Float16: return "float16";
    case DType::BFloat16: return "bfloat16";
    case DType::Float32: return "float32";
    case DType::Float64: return "float64";
  }
  return "?";
}

bool is_float(DType dt) {
  return dt == DType::Float16 || dt == DType::BFloat16 || dt == DType::Float32 || dt == DType::Float64;
}
bool is_int(DType dt) { return !is_float(dt) && dt != DType::Bool; }
bool is_unsigned(DType dt) { return dt == DType::Bool || dt == DType::UInt8; }

double dtype_highest(DType dt) {
  switch (dt) {
    case DType::Bool: return 1;
    case DType::UInt8: return 255;
    case DType::Int8: return 127;
    case DType::Int16: return 32767;
    case DType::Int32: return 2147483647.0;
    case DType::Int64: return 9223372036854775807.0;
    case DType::Float16: return 65504.0;
    case DType::BFloat16: return 3.3895313892515355e38;
    case DType::Float32: return static_cast<double>(std::numeric_limits<float>::max());
    case DType::Float64: return std::numeric_limits<double>::max();
  }
  return 0;
}

double dtype_lowest(DType dt) {
  if (is_float(dt)) return -dtype_highest(dt);
  if (is_unsigned(dt)) return 0;
  return -dtype_highest(dt) - 1;
}

namespace {
// Category rank: bool < integral < floating.
int category(DType dt) { return dt == DType::Bool ? 0 : is_float(dt) ? 2 : 1; }
}  // namespace

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  if (category(a) != category(b)) {
    // The higher category wins; within floats the float type is kept as is.
    return category(a) > category(b) ? a : b;
  }
  if (is_float(a)) {
    // float16 + bfloat16 -> float32 (neither holds the other), else the wider one.
    if ((a == DType::Float16 && b == DType::BFloat16) || (a == DType::BFloat16 && b == DType::Float16))
      return DType::Float32;
    return itemsize(a) >= itemsize(b) ? a : b;
  }
  // Integers: uint8 with a signed type needs the next wider signed type.
  auto widen_signed = [](DType s) {
    return s == DType::Int8 ? DType::Int16 : s;
  };
  if (a == DType::UInt8) return widen_signed(b);
  if (b == DType::UInt8) return widen_signed(a);
  return itemsize(a) >= itemsize(b) ? a : b;
}

DType result_type(DType t, const Scalar &s) {
  int sc = s.kind == Scalar::Kind::Bool ? 0 : s.kind == Scalar::Kind::Int ? 1 : 2;
  if (sc <= category(t)) return t;
  return sc == 1 ? DType::Int64 : DType::Float32;  // torch's default int / float dtypes
}

std::string Scalar::str() const {
  std::ostringstream os;
  if (kind == Kind::Bool) os << (i ? "True" : "False");
  else if (kind == Kind::Int) os << i;
  else os << f;
  return os.str();
}

void internal_fail(const char *file, int line, const std::string &msg) {
  std::ostringstream os;
  os << "loom internal error at " << file << ":" << line << ": " << msg;
  throw InternalError(os.str());
}

}  // namespace loom
