// The gradient oracle: torch's backward() over the same op map as run().

#include "torch_ops.h"

namespace loom::reference {

namespace {

bool is_half(at::ScalarType st) { return st == at::kHalf || st == at::kBFloat16; }

// upcast: float16/bfloat16 inputs become float32 leaves and their gradients are
// rounded back (the retry when torch has no half kernel for the backward).
GradResult grad_once(const std::string &op, const std::vector<ChainInput> &inputs, const Attrs &attrs,
                     const HostTensor &weight, bool upcast) {
    TorchArgs in, leaves;
    std::vector<size_t> leaf_of;
    std::vector<at::ScalarType> dtypes;
    for (size_t i = 0; i < inputs.size(); ++i) {
      at::Tensor t = chain(inputs[i].base, inputs[i].steps);
      dtypes.push_back(t.scalar_type());
      if (upcast && is_half(t.scalar_type())) t = t.to(at::kFloat);
      if (at::isFloatingType(t.scalar_type())) {
        // A leaf that keeps the view's storage and geometry.
        t = t.detach().requires_grad_(true);
        leaves.push_back(t);
        leaf_of.push_back(i);
      }
      in.push_back(t);
    }
    const at::Tensor out = run_torch(op, in, attrs);
    GradResult r;
    r.out = from_torch(out.detach());
    r.grads.resize(inputs.size());
    if (leaves.empty() || !out.requires_grad()) return r;
    const at::Tensor w = to_torch(weight).to(out.scalar_type());
    const at::Tensor loss = (out * w).sum();
    // backward() and the leaves' .grad, laid out by AccumulateGrad's contract
    // (the upcast leaves are float32 copies: their gradients' strides are not
    // the half leaves').
    r.grad_strides.resize(inputs.size());
    loss.backward();
    for (size_t k = 0; k < leaves.size(); ++k) {
      const at::Tensor g = leaves[k].grad();
      if (!g.defined()) continue;
      r.grads[leaf_of[k]] = from_torch(g.to(dtypes[leaf_of[k]]));
      if (!upcast) r.grad_strides[leaf_of[k]] = g.strides().vec();
    }
    return r;
}

}  // namespace

GradResult run_backward(const std::string &op, const std::vector<ChainInput> &inputs, const Attrs &attrs,
                        const HostTensor &weight) {
  return torch_call(op + " backward", [&] {
    try {
      return grad_once(op, inputs, attrs, weight, false);
    } catch (const c10::Error &e) {
      const std::string msg = e.what_without_backtrace();
      if (msg.find("not implemented for 'Half'") == std::string::npos &&
          msg.find("not implemented for 'BFloat16'") == std::string::npos)
        throw;
    }
    return grad_once(op, inputs, attrs, weight, true);
  });
}

}  // namespace loom::reference
