// matmul (Tensor method) and linear: a broadcast multiply and a sum over k.
// Integer operands give an integer result: the sum wraps to the dtype as
// torch's integer gemm does (the sum modulo 2^bits, whatever the order).
#include "nn/nn_util.h"

namespace loom {

using namespace nn::detail;

Tensor Tensor::matmul(const Tensor &o) const {
  if (ndim() == 0 || o.ndim() == 0)
    throw Error("matmul: both arguments to matmul need to be at least 1D, but they are " + std::to_string(ndim()) +
                "D and " + std::to_string(o.ndim()) + "D");
  if (dtype() != o.dtype())
    throw Error(std::string("matmul: expected both operands to have the same dtype, but got ") + dtype_name(dtype()) +
                " and " + dtype_name(o.dtype()));
  require_number(*this, "matmul");
  const bool a_vec = ndim() == 1, b_vec = o.ndim() == 1;
  Tensor a = a_vec ? unsqueeze(0) : *this;  // (k) -> (1, k)
  Tensor b = b_vec ? o.unsqueeze(1) : o;    // (k) -> (k, 1)
  const int64_t n = a.size(-2), k = a.size(-1), k2 = b.size(-2), m = b.size(-1);
  if (k != k2)
    throw Error("matmul: mat1 and mat2 shapes cannot be multiplied (" + std::to_string(n) + "x" + std::to_string(k) +
                " and " + std::to_string(k2) + "x" + std::to_string(m) + "); shapes " + shape_of(*this) + " and " +
                shape_of(o));
  // (..., n, k, 1) * (..., 1, k, m), summed over k.
  Tensor prod = up(a).unsqueeze(a.ndim()).mul(up(b).unsqueeze(b.ndim() - 2));
  Tensor r = prod.sum({-2}).cast(dtype());
  if (a_vec) r = r.squeeze({r.ndim() - 2});
  if (b_vec) r = r.squeeze({r.ndim() - 1});
  return r;
}

namespace nn {

Tensor linear(const Tensor &x, const Tensor &weight, const std::optional<Tensor> &bias) {
  if (weight.ndim() != 1 && weight.ndim() != 2)
    throw Error("linear: weight must be 1-D or 2-D, got " + shape_of(weight));
  if (bias && bias->ndim() > 1) throw Error("linear: bias must be 0-D or 1-D, got " + shape_of(*bias));
  if (weight.dtype() != x.dtype() || (bias && bias->dtype() != x.dtype()))
    throw Error(std::string("linear: expected input, weight and bias of one dtype, got ") + dtype_name(x.dtype()) +
                ", " + dtype_name(weight.dtype()) + (bias ? std::string(", ") + dtype_name(bias->dtype()) : ""));
  require_number(x, "linear");
  // Half types: one rounding after the bias, like torch's float32 addmm.
  Tensor y = up(x).matmul(up(weight.ndim() == 2 ? weight.transpose(0, 1) : weight));
  if (bias) y = y.add(up(*bias));
  return y.cast(x.dtype());
}

}  // namespace nn
}  // namespace loom
