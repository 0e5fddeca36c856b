// clamp (a Tensor method), softmax/log_softmax and the pointwise activations.
// Where torch's gradient differs from the composite's at the kinks (clamp,
// hardtanh) or the composite would overflow (softplus), a rule says torch's.
#include "nn/nn_util.h"
#include "tensor/graph.h"
#include "tensor/ops_util.h"
#include "tensor/record.h"

namespace loom {

using autograd::Grads;
using autograd::Saved;
using namespace nn::detail;

Tensor Tensor::clamp(std::optional<Scalar> min, std::optional<Scalar> max) const {
  if (!min && !max) throw Error("clamp: At least one of 'min' or 'max' must not be None; got " + str());
  // torch.clamp's dtype: the tensor's, lifted by a scalar of a higher category
  // (a bool tensor with an int bound clamps in int64); torch has no bool kernel.
  DType dt = dtype();
  if (min) dt = result_type(dt, *min);
  if (max) dt = result_type(dt, *max);
  if (dt == DType::Bool) throw TypeError("clamp: not implemented for dtype bool (bool bounds); got " + str());
  std::optional<Tensor> lo, hi;
  if (min) lo = Tensor::full({}, *min, dt);
  if (max) hi = Tensor::full({}, *max, dt);
  return autograd::apply(
      "ClampBackward", {*this},
      [&] {
        Tensor r = cast(dt);
        if (lo) r = r.maximum(*lo);
        if (hi) r = r.minimum(*hi);
        return r;
      },
      [x = Saved(*this, "ClampBackward"), lo, hi](const Tensor &g, const Tensor &) {
        Tensor v = x.get();
        Tensor pass = Tensor::ones(v.shape(), DType::Bool);
        if (lo) pass = pass.logical_and(v.ge(*lo));
        if (hi) pass = pass.logical_and(v.le(*hi));
        return Grads{pass.where(g, Tensor::zeros({}, g.dtype()))};
      });
}

namespace nn {

namespace {
// x with half types computed in float32; the result rounds once.
template <typename F>
Tensor in_f32(const Tensor &x, const char *op, F f) {
  require_float(x, op);
  return f(up(x)).cast(x.dtype());
}

Tensor zero_like(const Tensor &t) { return Tensor::zeros({}, t.dtype()); }
}  // namespace

// torch saves softmax's and log_softmax's result for their backward (an
// in-place update of it raises there); these composites mark their last node.
// torch's kernels write their results row-major, whatever the input's layout.
Tensor softmax(const Tensor &x, int64_t dim) {
  const int64_t d = tensor::wrap_dim(dim, x.ndim(), "softmax");
  // torch runs no kernel on an empty input, so it takes every dtype there.
  if (x.numel() == 0 && !is_float(x.dtype())) return Tensor::zeros(x.shape(), x.dtype());
  require_float(x, "softmax");
  if (x.numel() == 0 || x.ndim() == 0) return autograd::saves_result(x.ndim() == 0 ? x.sub(x).add(1) : x.mul(1));
  tensor::RowMajorScope row_major;
  return autograd::saves_result(in_f32(x, "softmax", [d](const Tensor &v) {
    Tensor e = v.sub(v.amax({d}, true).detach()).exp();
    return e.div(e.sum({d}, true));
  }));
}

Tensor log_softmax(const Tensor &x, int64_t dim) {
  const int64_t d = tensor::wrap_dim(dim, x.ndim(), "log_softmax");
  if (x.numel() == 0 && !is_float(x.dtype())) return Tensor::zeros(x.shape(), x.dtype());  // as softmax
  require_float(x, "log_softmax");
  if (x.numel() == 0 || x.ndim() == 0) return autograd::saves_result(x.ndim() == 0 ? x.sub(x) : x.mul(1));
  tensor::RowMajorScope row_major;
  return autograd::saves_result(in_f32(x, "log_softmax", [d](const Tensor &v) {
    Tensor s = v.sub(v.amax({d}, true).detach());
    return s.sub(s.exp().sum({d}, true).log());
  }));
}

Tensor silu(const Tensor &x) {
  return in_f32(x, "silu", [](const Tensor &v) { return v.mul(v.sigmoid()); });
}

Tensor leaky_relu(const Tensor &x, double negative_slope) {
  return in_f32(x, "leaky_relu", [negative_slope](const Tensor &v) {
    return v.gt(zero_like(v)).where(v, v.mul(negative_slope));
  });
}

Tensor elu(const Tensor &x, double alpha) {
  return in_f32(x, "elu", [alpha](const Tensor &v) {
    Tensor pos = v.gt(zero_like(v));
    Tensor neg_part = pos.where(zero_like(v), v);  // exp never sees large positives
    return pos.where(v, neg_part.exp().sub(1).mul(alpha));
  });
}

Tensor softplus(const Tensor &x, double beta, double threshold) {
  require_float(x, "softplus");
  auto forward = [&] {
    return in_f32(x, "softplus", [beta, threshold](const Tensor &v) {
      Tensor bx = v.mul(beta);
      // log1p(y) as log(u) - ((u - 1) - y) / u with u = 1 + y: exact to rounding for small y.
      Tensor y = bx.gt(Tensor::full({}, threshold, v.dtype())).where(zero_like(v), bx).exp();
      Tensor u = y.add(1);
      Tensor log1p = u.log().sub(u.sub(1).sub(y).div(u));
      return bx.gt(Tensor::full({}, threshold, v.dtype())).where(v, log1p.div(beta));
    });
  };
  // torch: z = exp(x * beta); grad * z / (z + 1) below the threshold, grad above.
  return autograd::apply("SoftplusBackward", {x}, forward,
                         [in = Saved(x, "SoftplusBackward"), beta, threshold](const Tensor &g, const Tensor &) {
                           Tensor v = up(in.get()), gg = up(g);
                           Tensor bx = v.mul(beta);
                           Tensor over = bx.gt(Tensor::full({}, threshold, v.dtype()));
                           Tensor z = over.where(zero_like(v), bx).exp();
                           return Grads{over.where(gg, gg.mul(z).div(z.add(1))).cast(g.dtype())};
                         });
}

Tensor hardtanh(const Tensor &x, double min_val, double max_val) {
  if (x.dtype() == DType::Bool) throw TypeError("hardtanh: Bool inputs not supported for hardtanh (dtype bool)");
  if (min_val > max_val)
    throw ValueError("hardtanh: min_val cannot be greater than max_val, got " + std::to_string(min_val) + " and " +
                     std::to_string(max_val));
  if (!is_float(x.dtype())) {
    // torch's integer hardtanh: the bounds truncated to integers, then clamp.
    const auto lo = static_cast<long long>(min_val), hi = static_cast<long long>(max_val);
    if (x.dtype() == DType::UInt8 && (lo < 0 || hi < 0))
      throw Error("hardtanh: cannot do hardtanh on an unsigned type with negative limits (dtype uint8, limits " +
                  std::to_string(lo) + " and " + std::to_string(hi) + ")");
    return x.clamp(Scalar(lo), Scalar(hi));
  }
  auto forward = [&] {
    Tensor lo = Tensor::full({}, min_val, x.dtype()), hi = Tensor::full({}, max_val, x.dtype());
    return x.maximum(lo).minimum(hi);
  };
  // torch's hardtanh_backward: no gradient at or beyond the bounds.
  return autograd::apply("HardtanhBackward", {x}, forward,
                         [in = Saved(x, "HardtanhBackward"), min_val, max_val](const Tensor &g, const Tensor &) {
                           Tensor v = in.get();
                           Tensor inside = v.gt(Tensor::full({}, min_val, v.dtype()))
                                               .logical_and(v.lt(Tensor::full({}, max_val, v.dtype())));
                           return Grads{inside.where(g, Tensor::zeros({}, g.dtype()))};
                         });
}

Tensor dropout(const Tensor &x, double p, bool training) {
  if (!(p >= 0 && p <= 1))
    throw ValueError("dropout: dropout probability has to be between 0 and 1, but got " + std::to_string(p));
  // torch returns the input, or multiplies it by zero, before it draws
  // anything, so those cases take every dtype.
  if (!training || p == 0 || x.numel() == 0) return x;
  if (p == 1) return x.mul(Tensor::zeros({}, x.dtype()));
  if (!is_float(x.dtype()))
    throw TypeError(std::string("dropout: result type Float can't be cast to the desired output type ") +
                    dtype_name(x.dtype()));
  Tensor keep = Tensor::rand(x.shape()).ge(Tensor::full({}, p));
  return in_f32(x, "dropout", [&](const Tensor &v) { return v.mul(keep.cast(v.dtype())).div(1 - p); });
}

}  // namespace nn
}  // namespace loom
