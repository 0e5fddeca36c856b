#include "nn/nn_util.h"

namespace loom::nn::detail {

void require_float(const Tensor &t, const char *op, const char *what) {
  if (!is_float(t.dtype()))
    throw TypeError(std::string(op) + ": " + what + " must be floating point, not implemented for dtype " +
                    dtype_name(t.dtype()));
}

void require_number(const Tensor &t, const char *op, const char *what) {
  if (t.dtype() == DType::Bool)
    throw TypeError(std::string(op) + ": " + what + " must be a number, not implemented for dtype " +
                    dtype_name(t.dtype()));
}

bool is_half(DType dt) { return dt == DType::Float16 || dt == DType::BFloat16; }
DType compute_dtype(DType dt) { return is_half(dt) ? DType::Float32 : dt; }
Tensor up(const Tensor &t) { return t.cast(compute_dtype(t.dtype())); }
std::optional<Tensor> up(const std::optional<Tensor> &t) {
  if (!t) return std::nullopt;
  return up(*t);
}

std::string shape_of(const Tensor &t) { return shape_str(t.shape()); }

void check_reduction(const std::string &reduction, const char *op) {
  if (reduction != "none" && reduction != "mean" && reduction != "sum")
    throw ValueError(std::string(op) + ": " + reduction + " is not a valid value for reduction");
}

Tensor reduce_loss(const Tensor &loss, const std::string &reduction, const char *op) {
  check_reduction(reduction, op);
  if (reduction == "none") return loss;
  if (reduction == "sum") return loss.sum();
  return loss.mean();
}

}  // namespace loom::nn::detail
