// Helpers shared by the nn op files: dtype checks, half-type compute, shapes.
#pragma once
#include <optional>
#include <string>

#include "loom/nn.h"
#include "loom/tensor.h"

namespace loom::nn::detail {

// Throws TypeError naming the op and dtype unless t is floating point.
void require_float(const Tensor &t, const char *op, const char *what = "input");
// Throws TypeError naming the op and dtype for bool: torch has integer kernels
// (integer accumulation, wrapping as the integer type wraps) but no bool ones.
void require_number(const Tensor &t, const char *op, const char *what = "input");
// The dtype the math runs in: float32 for float16/bfloat16, else the dtype.
DType compute_dtype(DType dt);
bool is_half(DType dt);
// t cast to compute_dtype(t.dtype()).
Tensor up(const Tensor &t);
std::optional<Tensor> up(const std::optional<Tensor> &t);
// "(2, 3)" of a tensor's shape.
std::string shape_of(const Tensor &t);
// Reduction "none" / "mean" / "sum" of an elementwise loss.
Tensor reduce_loss(const Tensor &loss, const std::string &reduction, const char *op);
void check_reduction(const std::string &reduction, const char *op);

}  // namespace loom::nn::detail
