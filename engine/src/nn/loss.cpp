// Losses. Class-index targets select through a one-hot comparison with
// arange(C) (so ignore_index rows select nothing); other targets outside
// [0, C) raise, as in torch.
#include <cmath>

#include "nn/nn_util.h"
#include "tensor/host_check.h"
#include "tensor/record.h"

namespace loom::nn {

using namespace detail;

namespace {

// The broadcast of two shapes, or empty-with-sentinel when they do not broadcast.
Shape broadcast_shape(const Shape &a, const Shape &b) {
  const size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())], db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da != db && da != 1 && db != 1) return {-1};
    out[i] = da == 1 ? db : da;
  }
  return out;
}

// num / den, NaN where den == 0 (torch's mean over no counted targets) with a
// zero gradient there, as torch's backward gives.
Tensor mean_by(const Tensor &num, const Tensor &den) {
  Tensor zero = den.eq(Tensor::zeros({}, den.dtype()));
  Tensor safe = zero.where(Tensor::ones({}, den.dtype()), den);
  return zero.where(Tensor::full({}, std::nan(""), num.dtype()), num.div(safe));
}

// Class dim of an input: 0 for (C), else 1.
int64_t class_dim(const Tensor &input) { return input.ndim() == 1 ? 0 : 1; }

// Weight broadcast along the class dim of an input of rank r.
Tensor class_weight(const Tensor &w, int64_t r, int64_t cdim) {
  Shape s(static_cast<size_t>(r), 1);
  s[static_cast<size_t>(cdim)] = w.size(0);
  return w.reshape(s);
}

void check_weight(const std::optional<Tensor> &weight, int64_t c, const char *op) {
  if (weight && (weight->ndim() != 1 || weight->size(0) != c))
    throw Error(std::string(op) + ": weight tensor should be defined either for all " + std::to_string(c) +
                " classes or no classes but got weight tensor of shape: " + shape_of(*weight));
}

// One-hot (as the input's compute dtype) of class-index targets, with a class dim at cdim.
Tensor one_hot(const Tensor &target, int64_t c, int64_t cdim, int64_t r) {
  Shape s(static_cast<size_t>(r), 1);
  s[static_cast<size_t>(cdim)] = c;
  return target.unsqueeze(cdim).eq(Tensor::arange(c).reshape(s));
}

// Shape and dtype of class-index targets, then their values (one realize):
// each must be a class in [0, C) or ignore_index, as torch checks.
void check_index_target(const Tensor &input, const Tensor &target, int64_t ignore_index, const char *op) {
  if (input.ndim() < 1) throw Error(std::string(op) + ": input tensor should be 1D or more, got " + shape_of(input));
  if (target.dtype() != DType::Int64)
    throw Error(std::string(op) + ": expected scalar type Long for class-index targets but found " +
                dtype_name(target.dtype()));
  Shape want = input.shape();
  want.erase(want.begin() + class_dim(input));
  if (target.shape() != want)
    throw ValueError(std::string(op) + ": Expected target size " + shape_str(want) + ", got " + shape_of(target) +
                     " for input of size " + shape_of(input));
  if (target.numel() == 0) return;
  const int64_t classes = input.shape()[class_dim(input)];
  tensor::check_on_host(target, [ignore_index, classes, op](const tensor::HostValues &h) {
    h.each_int([&](int64_t v) {
      if (v != ignore_index && (v < 0 || v >= classes))
        throw IndexError(std::string(op) + ": Target " + std::to_string(v) + " is out of bounds (" +
                         std::to_string(classes) + " classes).");
    });
  });
}

// nll over log-probabilities `logp` (compute dtype) and class-index targets.
Tensor nll_core(const Tensor &logp, const Tensor &target, const std::optional<Tensor> &weight,
                const std::string &reduction, int64_t ignore_index) {
  const int64_t cdim = class_dim(logp), c = logp.size(cdim), r = logp.ndim();
  Tensor hot = one_hot(target, c, cdim, r).logical_and(target.ne(Tensor::full({}, ignore_index)).unsqueeze(cdim));
  Tensor w = weight ? class_weight(up(*weight), r, cdim).expand(logp.shape()) : Tensor::ones({}, logp.dtype());
  Tensor zero = Tensor::zeros({}, logp.dtype());
  Tensor wt = hot.where(w, zero);                           // weight of each row's target class
  Tensor loss = wt.mul(logp).sum({cdim}).neg();             // (N, d1, ...)
  if (reduction == "none") return loss;
  if (reduction == "sum") return loss.sum();
  return mean_by(loss.sum(), wt.sum());  // all ignored: nan, like torch
}

}  // namespace

Tensor nll_loss(const Tensor &input, const Tensor &target, const std::optional<Tensor> &weight,
                const std::string &reduction, int64_t ignore_index) {
  check_reduction(reduction, "nll_loss");
  require_float(input, "nll_loss");
  check_index_target(input, target, ignore_index, "nll_loss");
  check_weight(weight, input.size(class_dim(input)), "nll_loss");
  if (weight && weight->dtype() != input.dtype())
    throw Error(std::string("nll_loss: expected weight of dtype ") + dtype_name(input.dtype()) + ", got " +
                dtype_name(weight->dtype()));
  std::vector<Tensor> saved{input, target};  // torch's NllLossBackward0 saves these and the weight
  if (weight) saved.push_back(*weight);
  return autograd::saves_inputs(nll_core(up(input), target, weight, reduction, ignore_index).cast(input.dtype()),
                                saved, "NllLossBackward0");
}

Tensor cross_entropy(const Tensor &input, const Tensor &target, const std::optional<Tensor> &weight,
                     const std::string &reduction, double label_smoothing, int64_t ignore_index) {
  const char *op = "cross_entropy";
  check_reduction(reduction, op);
  require_float(input, op);
  if (input.ndim() < 1) throw Error("cross_entropy: input tensor should be 1D or more, got " + shape_of(input));
  if (!(label_smoothing >= 0 && label_smoothing <= 1))
    throw Error("cross_entropy: label_smoothing must be between 0.0 and 1.0. Got: " + std::to_string(label_smoothing));
  const int64_t cdim = class_dim(input), c = input.size(cdim), r = input.ndim();
  check_weight(weight, c, op);
  if (weight && weight->dtype() != input.dtype())
    throw Error(std::string("cross_entropy: expected weight of dtype ") + dtype_name(input.dtype()) + ", got " +
                dtype_name(weight->dtype()));
  Tensor logp = log_softmax(up(input), cdim);
  const double n = static_cast<double>(c);
  if (is_float(target.dtype())) {  // class probabilities
    if (target.shape() != input.shape())
      throw ValueError("cross_entropy: Expected target size " + shape_of(input) + ", got " + shape_of(target));
    if (target.dtype() != input.dtype())
      throw Error(std::string("cross_entropy: expected target of dtype ") + dtype_name(input.dtype()) + ", got " +
                  dtype_name(target.dtype()));
    Tensor t = up(target);
    if (label_smoothing > 0) t = t.mul(1 - label_smoothing).add(label_smoothing / n);
    Tensor lp = weight ? logp.mul(class_weight(up(*weight), r, cdim)) : logp;
    Tensor prod = lp.mul(t);
    Tensor out;
    if (reduction == "none") out = prod.sum({cdim}).neg();
    else if (reduction == "sum") out = prod.sum().neg();
    else out = prod.sum().neg().div(static_cast<double>(input.numel()) / n);  // numel 0: nan
    // torch's products save the weight, and the target itself (not a smoothed
    // copy) where the log-probabilities need a gradient.
    std::vector<Tensor> saved;
    if (weight) saved.push_back(*weight);
    if (label_smoothing <= 0 && input.requires_grad()) saved.push_back(target);
    return autograd::saves_inputs(out.cast(input.dtype()), saved, "MulBackward0");
  }
  check_index_target(input, target, ignore_index, op);
  // torch's nll_loss node saves the targets and the weight.
  std::vector<Tensor> saved{target};
  if (weight) saved.push_back(*weight);
  Tensor nll = nll_core(logp, target, weight, reduction, ignore_index);
  if (label_smoothing <= 0) return autograd::saves_inputs(nll.cast(input.dtype()), saved, "NllLossBackward0");
  Tensor lp = weight ? logp.mul(class_weight(up(*weight), r, cdim)) : logp;
  Tensor ignored = target.eq(Tensor::full({}, ignore_index));
  Tensor smooth = ignored.where(Tensor::zeros({}, lp.dtype()), lp.sum({cdim}).neg());
  Tensor ret;
  if (reduction == "none") {
    ret = smooth;
  } else if (reduction == "sum") {
    ret = smooth.sum();
  } else if (weight) {
    Tensor hot = one_hot(target, c, cdim, r).logical_and(ignored.logical_not().unsqueeze(cdim));
    ret = mean_by(smooth.sum(), hot.where(class_weight(up(*weight), r, cdim).expand(lp.shape()), Tensor::zeros({}, lp.dtype())).sum());
  } else {  // torch divides by the targets not ignored
    ret = mean_by(smooth.sum(), ignored.logical_not().sum().cast(lp.dtype()));
  }
  return autograd::saves_inputs(nll.mul(1 - label_smoothing).add(ret.mul(label_smoothing / n)).cast(input.dtype()),
                                saved, "NllLossBackward0");
}

Tensor mse_loss(const Tensor &input, const Tensor &target, const std::string &reduction) {
  check_reduction(reduction, "mse_loss");
  require_float(input, "mse_loss");
  if (target.dtype() != input.dtype())
    throw Error(std::string("mse_loss: expected target of dtype ") + dtype_name(input.dtype()) + ", got " +
                dtype_name(target.dtype()));
  Tensor d = up(input).sub(up(target));
  // torch's node saves the input and the target; the square reads their difference.
  return autograd::saves_inputs(reduce_loss(d.mul(d), reduction, "mse_loss").cast(input.dtype()), {input, target},
                                "MseLossBackward0");
}

Tensor binary_cross_entropy_with_logits(const Tensor &input, const Tensor &target, const std::optional<Tensor> &weight,
                                        const std::string &reduction, const std::optional<Tensor> &pos_weight) {
  const char *op = "binary_cross_entropy_with_logits";
  check_reduction(reduction, op);
  require_float(input, op);
  if (target.shape() != input.shape())
    throw ValueError("binary_cross_entropy_with_logits: Target size (" + shape_of(target) +
                     ") must be the same as input size (" + shape_of(input) + ")");
  // torch applies the weights in place: they broadcast to the input's shape, never beyond it.
  for (const auto *w : {&weight, &pos_weight})
    if (*w && broadcast_shape((*w)->shape(), input.shape()) != input.shape())
      throw Error(std::string("binary_cross_entropy_with_logits: ") + (w == &weight ? "weight" : "pos_weight") +
                  " of shape " + shape_of(**w) + " doesn't broadcast to the input's shape " + shape_of(input));
  Tensor x = up(input), t = up(target);
  // torch: (1 - t) * x + (1 + (pw - 1) * t) * softplus(-x); pw = 1 without pos_weight.
  // softplus(-x) piecewise on the sign of x, each piece smooth and overflow-free,
  // so the gradient at x = 0 is torch's sigmoid(0) - t.
  Tensor zero = Tensor::zeros({}, x.dtype());
  Tensor neg = x.lt(zero);
  Tensor xn = neg.where(x, zero), xp = neg.where(zero, x);
  auto log1p_exp = [](const Tensor &v) {  // log(1 + exp(v)) for v <= 0, exact to rounding
    Tensor e = v.exp(), u = e.add(1);
    return u.log().sub(u.sub(1).sub(e).div(u));
  };
  Tensor soft = neg.where(log1p_exp(xn).sub(xn), log1p_exp(xp.neg()));
  Tensor loss;
  if (pos_weight) {
    Tensor lw = up(*pos_weight).sub(1).mul(t).add(1);
    loss = t.neg().add(1).mul(x).add(lw.mul(soft));
  } else {
    loss = t.neg().add(1).mul(x).add(soft);
  }
  if (weight) loss = loss.mul(up(*weight));
  // torch's node saves the input, the target and both weights.
  std::vector<Tensor> saved{input, target};
  for (const auto *w : {&weight, &pos_weight})
    if (*w) saved.push_back(**w);
  return autograd::saves_inputs(reduce_loss(loss, reduction, op).cast(input.dtype()), saved,
                                "BinaryCrossEntropyWithLogitsBackward0");
}

}  // namespace loom::nn
