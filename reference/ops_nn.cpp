// The reference op map's neural-network ops: linear algebra, convolution, pooling, normalization, activations, losses.
#include <ATen/core/Reduction.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/custom_function.h>

#include "torch_ops.h"

namespace loom::reference {

namespace {

int64_t reduction_enum(const Attrs &a) {
  const std::string r = a.has("reduction") ? a.get_string("reduction") : std::string("mean");
  if (r == "none") return at::Reduction::None;
  if (r == "sum") return at::Reduction::Sum;
  if (r == "mean") return at::Reduction::Mean;
  throw std::runtime_error(r + " is not a valid value for reduction");
}

std::vector<int64_t> pair_attr(const Attrs &a, const std::string &k, std::vector<int64_t> dflt) {
  return a.get_ints(k, dflt);
}

// torch 1.13's CPU bfloat16 convolution rounds partial sums to bfloat16 (0.25
// off the float32 answer at magnitude ~10), and its bfloat16 layer_norm /
// batch_norm apply a folded scale and shift in bfloat16 (a constant row comes
// out ~0.1 off its bias); binary_cross_entropy_with_logits is a composite whose
// every step rounds to the half type (20% off for a small loss). For those ops the oracle is the float32 op rounded
// once, which is loom's contract for half types.
TorchOp in_float32(TorchOp f) {
  return [f](const TorchArgs &in, const Attrs &a) {
    const at::ScalarType st = in.at(0).scalar_type();
    if (st != at::kHalf && st != at::kBFloat16) return f(in, a);
    TorchArgs x;
    for (const at::Tensor &t : in) x.push_back(t.scalar_type() == st ? t.to(at::kFloat) : t);
    at::Tensor r = f(x, a);
    return r.scalar_type() == at::kFloat ? r.to(st) : r;
  };
}

// torch's pools lay their result out in the input's suggested memory format,
// but torch 1.13 has no float16 pool on the CPU, and the float32 copy of an
// overlapping half input is laid out by sorting its strides (it can suggest
// channels_last where the half input does not). The pool runs on that copy;
// its result takes the half input's format.
TorchOp in_input_format(TorchOp f) {
  return [f](const TorchArgs &in, const Attrs &a) {
    const at::ScalarType st = in.at(0).scalar_type();
    if (st != at::kHalf && st != at::kBFloat16) return f(in, a);
    TorchArgs x = in;
    x.at(0) = in.at(0).to(at::kFloat);
    const at::MemoryFormat format =
        in.at(0).dim() == 4 ? in.at(0).suggest_memory_format() : at::MemoryFormat::Contiguous;
    return f(x, a).to(st).contiguous(format);
  };
}

// torch's float32 layer_norm folds (x - mean) * rstd into x * rstd - mean * rstd,
// which cancels badly where the variance is ~0 (a single normalized element:
// 2e-5 off an exact 0 * rstd). Its oracle is the float64 op rounded once, with
// torch's own node's saved tensors: input, weight and bias are saved as they
// are (not their float64 copies), so an in-place change of one before
// backward raises as torch's NativeLayerNormBackward0 does. The backward
// recomputes in float64.
struct LayerNormInFloat64 : torch::autograd::Function<LayerNormInFloat64> {
  static at::Tensor forward(torch::autograd::AutogradContext *ctx, const at::Tensor &x, const at::Tensor &w,
                            const at::Tensor &b, std::vector<int64_t> shape, double eps) {
    ctx->save_for_backward({x, w, b});
    ctx->saved_data["shape"] = shape;
    ctx->saved_data["eps"] = eps;
    return run(x, w, b, shape, eps).to(x.scalar_type());
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext *ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();  // raises when one changed in place
    const at::AutoGradMode grad_mode(true);            // off in a backward by default
    torch::autograd::variable_list in, wanted;
    for (const at::Tensor &t : saved) {
      in.push_back(t.defined() ? t.detach().to(at::kDouble).requires_grad_(t.requires_grad()) : t);
      if (t.defined() && t.requires_grad()) wanted.push_back(in.back());
    }
    const at::Tensor y = run(in[0], in[1], in[2], ctx->saved_data["shape"].toIntVector(),
                             ctx->saved_data["eps"].toDouble());
    const auto g = torch::autograd::grad({y}, wanted, {grads[0].to(at::kDouble)});
    torch::autograd::variable_list out;
    size_t k = 0;
    for (const at::Tensor &t : saved) out.push_back(t.defined() && t.requires_grad() ? g[k++].to(t.scalar_type()) : at::Tensor());
    out.push_back(at::Tensor()), out.push_back(at::Tensor());  // shape, eps
    return out;
  }
  static at::Tensor run(const at::Tensor &x, const at::Tensor &w, const at::Tensor &b, at::IntArrayRef shape,
                        double eps) {
    auto wide = [](const at::Tensor &t) { return t.defined() ? t.to(at::kDouble) : t; };
    return at::layer_norm(wide(x), shape, wide(w), wide(b), eps);
  }
};

at::Tensor conv(const TorchArgs &x, const Attrs &a, bool with_bias) {
  const c10::optional<at::Tensor> bias = with_bias ? c10::optional<at::Tensor>(x.at(2)) : c10::nullopt;
  const auto stride = pair_attr(a, "stride", {1, 1}), dilation = pair_attr(a, "dilation", {1, 1});
  const int64_t groups = a.has("groups") ? a.get_int("groups") : 1;
  at::Tensor r = a.has("padding_mode")
                     ? at::conv2d(x.at(0), x.at(1), bias, stride, a.get_string("padding_mode"), dilation, groups)
                     : at::conv2d(x.at(0), x.at(1), bias, stride, pair_attr(a, "padding", {0, 0}), dilation, groups);
  return r;
}

// Constant tensors the op table passes as attrs (class weights, running
// statistics): ints k meaning k / 4, exact in every float dtype.
at::Tensor quarters(const Attrs &a, const std::string &k, const at::Tensor &like) {
  std::vector<double> v;
  for (int64_t q : a.get_ints(k)) v.push_back(static_cast<double>(q) / 4);
  return at::tensor(v, at::TensorOptions().dtype(at::kDouble)).to(like.scalar_type());
}

at::Tensor batch_norm(const TorchArgs &x, const Attrs &a, const std::string &result) {
  // F.batch_norm's own check (at::batch_norm would divide by zero for the unbiased variance).
  if (a.get_bool("training") && x.at(0).numel() / std::max<int64_t>(x.at(0).size(1), 1) <= 1)
    throw std::runtime_error("Expected more than 1 value per channel when training");
  at::Tensor rm = quarters(a, "running_mean", x.at(0)), rv = quarters(a, "running_var", x.at(0));
  // .contiguous(): torch 1.13's CPU batch_norm backward is wrong for
  // channels_last-contiguous input in training (sizes (1, 2, 1, 3), strides
  // (2, 1, 2, 2): input gradient off by 3x) and for a strided weight in eval
  // (stride 3: the input gradient reads the wrong weights); the same values in
  // row-major order are right.
  const bool training = a.get_bool("training");
  const double momentum = a.get_double("momentum"), eps = a.get_double("eps");
  at::Tensor y = at::batch_norm(x.at(0).contiguous(), x.at(1).contiguous(), x.at(2).contiguous(), rm, rv, training,
                                momentum, eps, false);
  if (result == "running_mean") return rm;
  if (result == "running_var") return rv;
  // The result laid out as torch's own forward lays it out on the input as
  // given (its values are right there; only its backward is wrong), with
  // copies of the running statistics; the copy into it is differentiable.
  at::Tensor layout;
  {
    const at::NoGradGuard no_grad;
    layout = at::batch_norm(x.at(0), x.at(1), x.at(2), rm.defined() ? rm.clone() : rm, rv.defined() ? rv.clone() : rv,
                            training, momentum, eps, false);
  }
  return at::empty_strided(layout.sizes(), layout.strides(), y.options()).copy_(y);
}

c10::optional<at::Scalar> opt_scalar(const Attrs &a, const std::string &k) {
  if (!a.has(k)) return c10::nullopt;
  return to_torch_scalar(a.get_scalar(k));
}

}  // namespace

void add_nn_ops(OpMap &t) {
  // ---- linear algebra
  t["matmul"] = [](const TorchArgs &x, const Attrs &) { return at::matmul(x.at(0), x.at(1)); };
  t["linear"] = [](const TorchArgs &x, const Attrs &) { return at::linear(x.at(0), x.at(1), x.at(2)); };
  t["linear_nobias"] = [](const TorchArgs &x, const Attrs &) { return at::linear(x.at(0), x.at(1)); };
  // ---- convolution and pooling
  t["conv2d"] = in_float32([](const TorchArgs &x, const Attrs &a) { return conv(x, a, true); });
  t["conv2d_nobias"] = in_float32([](const TorchArgs &x, const Attrs &a) { return conv(x, a, false); });
  t["max_pool2d"] = in_input_format([](const TorchArgs &x, const Attrs &a) {
    const auto k = a.get_ints("kernel");
    return at::max_pool2d(x.at(0), k, a.get_ints("stride", k), pair_attr(a, "padding", {0, 0}),
                          pair_attr(a, "dilation", {1, 1}), a.get_bool("ceil_mode", false));
  });
  t["avg_pool2d"] = in_input_format([](const TorchArgs &x, const Attrs &a) {
    const auto k = a.get_ints("kernel");
    const std::optional<int64_t> d = a.opt_int("divisor_override");
    const c10::optional<int64_t> divisor = d ? c10::optional<int64_t>(*d) : c10::nullopt;
    return at::avg_pool2d(x.at(0), k, a.get_ints("stride", k), pair_attr(a, "padding", {0, 0}),
                          a.get_bool("ceil_mode", false), a.get_bool("count_include_pad", true), divisor);
  });
  t["adaptive_avg_pool2d"] = in_input_format([](const TorchArgs &x, const Attrs &a) {
    return at::adaptive_avg_pool2d(x.at(0), a.get_ints("output_size"));
  });
  // ---- normalization: inputs (x, weight, bias); running statistics as attrs
  t["batch_norm"] = in_float32([](const TorchArgs &x, const Attrs &a) { return batch_norm(x, a, "out"); });
  t["batch_norm_running_mean"] = in_float32([](const TorchArgs &x, const Attrs &a) { return batch_norm(x, a, "running_mean"); });
  t["batch_norm_running_var"] = in_float32([](const TorchArgs &x, const Attrs &a) { return batch_norm(x, a, "running_var"); });
  t["layer_norm"] = [](const TorchArgs &x, const Attrs &a) {
    if (x.at(0).scalar_type() == at::kDouble || !at::isFloatingType(x.at(0).scalar_type()) ||
        x.at(1).scalar_type() != x.at(0).scalar_type() || x.at(2).scalar_type() != x.at(0).scalar_type())
      return at::layer_norm(x.at(0), a.get_ints("normalized_shape"), x.at(1), x.at(2), a.get_double("eps"));
    return LayerNormInFloat64::apply(x.at(0), x.at(1), x.at(2), a.get_ints("normalized_shape"), a.get_double("eps"));
  };
  // ---- activations
  t["softmax"] = [](const TorchArgs &x, const Attrs &a) { return at::softmax(x.at(0), a.get_int("dim")); };
  t["log_softmax"] = [](const TorchArgs &x, const Attrs &a) { return at::log_softmax(x.at(0), a.get_int("dim")); };
  t["silu"] = [](const TorchArgs &x, const Attrs &) { return at::silu(x.at(0)); };
  t["leaky_relu"] = [](const TorchArgs &x, const Attrs &a) {
    return at::leaky_relu(x.at(0), a.get_double("negative_slope"));
  };
  t["elu"] = [](const TorchArgs &x, const Attrs &a) { return at::elu(x.at(0), a.get_double("alpha")); };
  t["softplus"] = [](const TorchArgs &x, const Attrs &a) {
    return at::softplus(x.at(0), a.get_double("beta"), a.get_double("threshold"));
  };
  t["hardtanh"] = [](const TorchArgs &x, const Attrs &a) {
    return at::hardtanh(x.at(0), a.get_double("min_val"), a.get_double("max_val"));
  };
  t["clamp"] = [](const TorchArgs &x, const Attrs &a) {
    return at::clamp(x.at(0), opt_scalar(a, "min"), opt_scalar(a, "max"));
  };
  t["dropout"] = [](const TorchArgs &x, const Attrs &a) {
    return at::dropout(x.at(0), a.get_double("p"), a.get_bool("training"));
  };
  // ---- losses (weights come as attrs: torch implements no derivative for them)
  t["cross_entropy"] = [](const TorchArgs &x, const Attrs &a) {
    return at::cross_entropy_loss(x.at(0), x.at(1), {}, reduction_enum(a), a.get_int("ignore_index"),
                                  a.get_double("label_smoothing"));
  };
  t["cross_entropy_weighted"] = [](const TorchArgs &x, const Attrs &a) {
    return at::cross_entropy_loss(x.at(0), x.at(1), quarters(a, "weight", x.at(0)), reduction_enum(a), a.get_int("ignore_index"),
                                  a.get_double("label_smoothing"));
  };
  // .contiguous(): torch 1.13's nll_loss backward rejects a strided input ("grad_input must be contiguous").
  t["nll_loss"] = [](const TorchArgs &x, const Attrs &a) {
    return at::nll_loss_nd(x.at(0).contiguous(), x.at(1), {}, reduction_enum(a), a.get_int("ignore_index"));
  };
  t["nll_loss_weighted"] = [](const TorchArgs &x, const Attrs &a) {
    return at::nll_loss_nd(x.at(0).contiguous(), x.at(1), quarters(a, "weight", x.at(0)), reduction_enum(a), a.get_int("ignore_index"));
  };
  t["mse_loss"] = [](const TorchArgs &x, const Attrs &a) { return at::mse_loss(x.at(0), x.at(1), reduction_enum(a)); };
  t["binary_cross_entropy_with_logits"] = in_float32([](const TorchArgs &x, const Attrs &a) {
    return at::binary_cross_entropy_with_logits(x.at(0), x.at(1), {}, {}, reduction_enum(a));
  });
  t["binary_cross_entropy_with_logits_weighted"] = in_float32([](const TorchArgs &x, const Attrs &a) {
    return at::binary_cross_entropy_with_logits(x.at(0), x.at(1), quarters(a, "weight", x.at(0)), quarters(a, "pos_weight", x.at(0)), reduction_enum(a));
  });
}

}  // namespace loom::reference
