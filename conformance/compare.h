// Comparing engine results with the reference: shape, dtype, then values with
// per-dtype tolerances (NaN matches NaN; ints and bools exact).
#pragma once
#include <optional>
#include <string>

#include "loom/host.h"

namespace loom::conformance {

struct Tolerance {
  double rtol = 0, atol = 0;
};

// Defaults per result dtype: float16 ~2 ulp, bfloat16 ~2 ulp, float32 1e-5,
// float64 1e-10, integers and bool exact.
Tolerance default_tolerance(DType dt);

// nullopt when equal within `tol`; else a one-paragraph description of the
// first mismatch (index, expected, got) and how many elements differ.
std::optional<std::string> compare(const HostTensor &got, const HostTensor &want, Tolerance tol);

// nullopt when the strides agree on every dim of more than one element (a
// size-1 dim's stride places nothing; torch's own vary there) or the shape
// is empty; else "result strides (..), torch's (..) (shape (..); ...)".
std::optional<std::string> compare_strides(const Shape &shape, const std::vector<int64_t> &got,
                                           const std::vector<int64_t> &want);

// "float32 (2, 3) strides (3, 1) offset 0 storage 6"
std::string geometry_str(const HostTensor &h);
// The logical values, at most `max_elems`, e.g. "[1, 2.5, nan]".
std::string values_str(const HostTensor &h, int64_t max_elems = 24);

}  // namespace loom::conformance
