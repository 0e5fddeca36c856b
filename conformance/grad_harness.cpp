// Backward cases: the engine's autograd against torch.autograd.grad, and a
// float64 finite-difference check that needs no reference at all.
#include <cmath>
#include <sstream>

#include "harness.h"
#include "loom/autograd.h"

namespace loom::conformance {
namespace {

HostTensor random_like(const Shape &shape, DType dt, Rng &rng) {
  HostTensor w = HostTensor::contiguous(dt, shape);
  fill_storage(w, Domain{-2, 2}, rng);
  return w;
}

CaseResult failed(const std::string &header, const std::string &why) {
  CaseResult r;
  r.outcome = Outcome::Fail;
  r.summary = first_line(why);
  r.report = header + "\n  FAILED: " + why;
  return r;
}

// Engine inputs: every floating-point one a leaf that requires grad.
std::vector<Tensor> engine_leaves(const PreparedCase &c) {
  std::vector<Tensor> ts;
  for (const LayoutInput &in : c.ins) {
    Tensor t = build_engine(in).detach();
    if (is_float(t.dtype())) t.requires_grad_();
    ts.push_back(t);
  }
  return ts;
}

// torch's gradient of input i for the case's values, every input contiguous
// (no view steps); nullopt where torch's backward throws or gives none.
std::optional<HostTensor> contiguous_gradient(const OpEntry &op, const PreparedCase &c, const HostTensor &w, size_t i) {
  std::vector<reference::ChainInput> plain;
  for (const LayoutInput &in : c.ins) plain.push_back({in.view.to_contiguous(), {}});
  try {
    return reference::run_backward(op.ref_op, plain, c.attrs, w).grads.at(i);
  } catch (const std::exception &) {
    return std::nullopt;
  }
}

}  // namespace

CaseResult run_grad_case(const CaseSpec &spec) {
  const OpEntry &op = *spec.op;
  PreparedCase c = prepare_case(spec);
  std::vector<reference::ChainInput> chain_ins;
  for (const LayoutInput &in : c.ins) chain_ins.push_back({in.base, in.steps});

  // The output's shape and dtype (for w) come from torch's forward.
  const std::optional<HostTensor> want = torch_forward(op, c);
  CaseResult r;
  if (!want) {
    r.summary = "torch rejects the input (the forward property checks the engine does too)";
    return r;
  }
  const HostTensor w = random_like(want->shape, want->dtype, *c.rng);
  std::ostringstream hdr;
  hdr << c.header << "\n  weight w " << values_str(w);
  const std::string header = hdr.str();

  reference::GradResult ref;
  try {
    ref = reference::run_backward(op.ref_op, chain_ins, c.attrs, w);
  } catch (const std::exception &e) {
    return failed(header, std::string("torch's backward threw: ") + e.what());
  }

  std::vector<Tensor> leaves;
  std::vector<size_t> leaf_of;
  try {
    std::vector<Tensor> ts = engine_leaves(c);
    for (size_t i = 0; i < ts.size(); ++i)
      if (ts[i].requires_grad()) leaves.push_back(ts[i]), leaf_of.push_back(i);
    Tensor out = op.engine(ts, c.attrs);
    if (!out.requires_grad()) {
      for (const auto &g : ref.grads)
        if (g) return failed(header, "the engine's output does not require grad, but torch differentiates it");
      r.summary = "not differentiable in torch either";
      return r;
    }
    out.mul(Tensor::from_host(w)).sum().backward();
  } catch (const std::exception &e) {
    return failed(header, std::string("the engine's backward threw: ") + e.what());
  }
  const bool negative = has_negative_layout(spec);
  for (size_t k = 0; k < leaves.size(); ++k) {
    const size_t i = leaf_of[k];
    const std::optional<Tensor> grad = leaves[k].grad();
    HostTensor got;
    try {
      // No .grad: no path led to the leaf, a zero gradient (as torch's missing one is).
      got = grad ? grad->to_host() : HostTensor::contiguous(leaves[k].dtype(), leaves[k].shape());
    } catch (const std::exception &e) {
      return failed(header, "realizing the gradient of input " + std::to_string(i) + " threw: " + e.what());
    }
    const HostTensor expect = ref.grads[i] ? *ref.grads[i] : HostTensor::contiguous(got.dtype, c.views[i].shape);
    if (grad && ref.grad_strides.at(i) && !negative)
      if (auto bad = compare_strides(got.shape, grad->strides(), *ref.grad_strides[i]))
        return failed(header, ".grad of input " + std::to_string(i) + ": " + *bad);
    Tolerance tol = tolerance_for(op, expect, c.views, c.attrs);
    tol.rtol *= op.grad_tol_scale;
    tol.atol *= op.grad_tol_scale;
    // Gradients sum over the outputs each input feeds.
    const double fan = std::max(1.0, double(want->numel()) / double(std::max<int64_t>(1, expect.numel())));
    tol.atol *= std::sqrt(fan) * 2;
    if (auto bad = compare(got, expect, tol)) {
      // torch's CPU kernels are not always right: where its gradient for this
      // layout differs from its gradient for the same values laid out
      // contiguously, and the engine's matches the latter, torch's layout path
      // is at fault (a grouped conv2d with a channels_last weight over an input
      // with odd size-1 strides is one, in libtorch 1.13). Not for movement
      // ops, whose results depend on the layout's storage.
      const std::optional<HostTensor> plain = op.view_op ? std::nullopt : contiguous_gradient(op, c, w, i);
      if (plain && compare(*plain, expect, tol) && !compare(got, *plain, tol)) {
        r.summary = "torch's gradient of input " + std::to_string(i) +
                    " depends on the inputs' layout; the engine's matches torch's for contiguous inputs";
        continue;
      }
      return failed(header + "\n  torch's gradient of input " + std::to_string(i) + " " + values_str(expect) +
                        "\n  engine's gradient " + values_str(got),
                    "gradient of input " + std::to_string(i) + ": " + *bad);
    }
  }
  return r;
}

CaseResult probe_torch_gradient(const CaseSpec &spec) {
  const OpEntry &op = *spec.op;
  PreparedCase c = prepare_case(spec);
  CaseResult r;
  std::string ref_error;
  const std::optional<HostTensor> want = torch_forward(op, c, &ref_error);
  if (!want) {
    r.summary = "torch rejects the input: " + ref_error;
    return r;
  }
  bool any_float = false;
  for (DType dt : c.in_dtypes) any_float |= is_float(dt);
  if (!any_float) {
    r.summary = "no floating-point input: torch has nothing to differentiate";
    return r;
  }
  std::vector<reference::ChainInput> chain_ins;
  for (const LayoutInput &in : c.ins) chain_ins.push_back({in.base, in.steps});
  const HostTensor w = random_like(want->shape, want->dtype, *c.rng);
  reference::GradResult ref;
  try {
    ref = reference::run_backward(op.ref_op, chain_ins, c.attrs, w);
  } catch (const std::exception &e) {
    r.summary = "torch's backward raises: " + first_line(e.what());
    return r;
  }
  for (size_t i = 0; i < ref.grads.size(); ++i)
    if (ref.grads[i]) {
      r.outcome = Outcome::Gap;
      r.summary = "torch gives a gradient of input " + std::to_string(i) + ", the table compares none (" +
                  (op.backward ? std::string("dtype outside the entry") : std::string("entry without backward")) + ")";
      r.report = c.header + "\n  GAP: " + r.summary;
      return r;
    }
  r.summary = "torch gives no gradient (the output does not depend differentiably on a floating input)";
  return r;
}

CaseResult run_finite_difference_case(const CaseSpec &spec) {
  const OpEntry &op = *spec.op;
  // Off any grid, so no input sits on a kink (relu at 0, ties in max).
  PreparedCase c = prepare_case(spec, [](Domain d) {
    d.grid = 0;
    d.zero_prob = 0;
    return d;
  });
  CaseResult r;
  std::vector<Tensor> ts;
  Tensor out;
  try {
    ts = engine_leaves(c);
    out = op.engine(ts, c.attrs);
  } catch (const Error &e) {
    r.summary = std::string("the engine rejects the input: ") + first_line(e.what());
    return r;
  }
  if (out.dtype() != DType::Float64) {
    r.summary = "the output is not float64 (finite differences need its precision)";
    return r;
  }
  if (!out.requires_grad()) return failed(c.header, "the output of a differentiable entry does not require grad");
  const HostTensor w = random_like(out.shape(), DType::Float64, *c.rng);
  auto loss_at = [&](const std::vector<HostTensor> &bases) {
    std::vector<Tensor> xs;
    for (size_t i = 0; i < c.ins.size(); ++i) {
      LayoutInput in = c.ins[i];
      in.base = bases[i];
      xs.push_back(build_engine(in));
    }
    HostTensor o = op.engine(xs, c.attrs).to_host();
    double l = 0;
    for (int64_t k = 0; k < o.numel(); ++k) l += o.get(k) * w.get(k);
    return l;
  };
  std::vector<Tensor> leaves;
  std::vector<size_t> leaf_of;
  for (size_t i = 0; i < ts.size(); ++i)
    if (ts[i].requires_grad()) leaves.push_back(ts[i]), leaf_of.push_back(i);
  Tensor loss = out.mul(Tensor::from_host(w)).sum();
  std::vector<Tensor> grads = autograd::grad({loss}, leaves, {}, true);
  std::vector<HostTensor> g_host;
  for (const Tensor &g : grads) g_host.push_back(g.cast(DType::Float64).to_host());

  // Directions move every storage element of the floating inputs; the
  // gradient pairs with the view's elements, so grad . v sums over the view.
  constexpr double h = 1e-6;
  for (int trial = 0; trial < 2; ++trial) {
    std::vector<HostTensor> plus, minus;
    double predicted = 0;
    for (size_t i = 0; i < c.ins.size(); ++i) {
      plus.push_back(c.ins[i].base.to_contiguous());
      minus.push_back(c.ins[i].base.to_contiguous());
    }
    for (size_t k = 0; k < leaves.size(); ++k) {
      const size_t i = leaf_of[k];
      HostTensor v = random_like(c.ins[i].base.shape, DType::Float64, *c.rng);
      for (int64_t e = 0; e < v.numel(); ++e) {
        plus[i].set(e, c.ins[i].base.get(e) + h * v.get(e));
        minus[i].set(e, c.ins[i].base.get(e) - h * v.get(e));
      }
      // The view's element j reads storage index view_index(j): its share of v.
      HostTensor view_v = c.ins[i].view;
      view_v.storage = v.storage;
      for (int64_t j = 0; j < view_v.numel(); ++j) predicted += g_host[k].get(j) * view_v.get(j);
    }
    const double numeric = (loss_at(plus) - loss_at(minus)) / (2 * h);
    if (!std::isfinite(numeric)) {
      r.summary = "the loss is not finite";  // e.g. the mean of an empty tensor
      return r;
    }
    if (!(std::fabs(numeric - predicted) <= 1e-6 + 1e-5 * std::fabs(numeric))) {
      std::ostringstream why;
      why.precision(12);
      why << "directional derivative: finite difference " << numeric << ", autograd " << predicted;
      return failed(c.header, why.str());
    }
  }
  return r;
}

}  // namespace loom::conformance
