#include "compare.h"

#include <cmath>
#include <sstream>

namespace loom::conformance {

Tolerance default_tolerance(DType dt) {
  switch (dt) {
    case DType::Float16: return {2e-3, 1e-3};
    case DType::BFloat16: return {1.6e-2, 1e-2};
    case DType::Float32: return {1e-5, 1e-6};
    case DType::Float64: return {1e-10, 1e-12};
    default: return {0, 0};
  }
}

namespace {

bool close(double got, double want, Tolerance tol) {
  if (std::isnan(got) || std::isnan(want)) return std::isnan(got) && std::isnan(want);
  if (std::isinf(got) || std::isinf(want)) return got == want;
  return std::fabs(got - want) <= tol.atol + tol.rtol * std::fabs(want);
}

std::string num(double v) {
  std::ostringstream os;
  os.precision(10);
  os << v;
  return os.str();
}

}  // namespace

std::optional<std::string> compare(const HostTensor &got, const HostTensor &want, Tolerance tol) {
  if (got.shape != want.shape)
    return "shape: expected " + shape_str(want.shape) + ", got " + shape_str(got.shape);
  if (got.dtype != want.dtype)
    return std::string("dtype: expected ") + dtype_name(want.dtype) + ", got " + dtype_name(got.dtype);
  const bool exact = !is_float(want.dtype);
  int64_t bad = 0, first = -1;
  for (int64_t i = 0; i < want.numel(); ++i) {
    const bool ok = exact ? got.get_int(i) == want.get_int(i) : close(got.get(i), want.get(i), tol);
    if (!ok && bad++ == 0) first = i;
  }
  if (!bad) return std::nullopt;
  std::ostringstream os;
  os << bad << " of " << want.numel() << " values differ (rtol " << tol.rtol << ", atol " << tol.atol
     << "); first at flat index " << first << ": expected "
     << (exact ? std::to_string(want.get_int(first)) : num(want.get(first))) << ", got "
     << (exact ? std::to_string(got.get_int(first)) : num(got.get(first))) << "\n  expected " << values_str(want)
     << "\n  got      " << values_str(got);
  return os.str();
}

std::string geometry_str(const HostTensor &h) {
  return std::string(dtype_name(h.dtype)) + " " + shape_str(h.shape) + " strides " + shape_str(h.strides) +
         " offset " + std::to_string(h.offset) + " storage " + std::to_string(h.storage_numel());
}

std::string values_str(const HostTensor &h, int64_t max_elems) {
  std::ostringstream os;
  os << '[';
  const int64_t n = h.numel();
  for (int64_t i = 0; i < n && i < max_elems; ++i) {
    os << (i ? ", " : "");
    if (is_float(h.dtype)) os << num(h.get(i));
    else os << h.get_int(i);
  }
  if (n > max_elems) os << ", ... (" << n << " values)";
  os << ']';
  return os.str();
}

std::optional<std::string> compare_strides(const Shape &shape, const std::vector<int64_t> &got,
                                           const std::vector<int64_t> &want) {
  if (shape_numel(shape) == 0) return std::nullopt;
  bool same = got.size() == want.size() && got.size() == shape.size();
  for (size_t d = 0; same && d < shape.size(); ++d) same = shape[d] == 1 || got[d] == want[d];
  if (same) return std::nullopt;
  return "result strides " + shape_str(got) + ", torch's " + shape_str(want) + " (shape " + shape_str(shape) +
         "; size-1 dims aside)";
}

}  // namespace loom::conformance
