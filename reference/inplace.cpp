// The libtorch side of the in-place autograd check (see run_inplace_case in reference.h).
#include <torch/csrc/autograd/autograd.h>

#include "torch_ops.h"

namespace loom::reference {

InPlaceResult run_inplace_case(const InPlaceCase &c) {
  return torch_call("inplace", [&] {
    const at::Tensor x = to_torch(c.x).detach().requires_grad_(true);
    const at::Tensor w = to_torch(c.w).detach().requires_grad_(true);
    const at::Tensor y = (c.base_requires_grad ? x : x.detach()).mul(2);
    at::Tensor v = y;
    for (const ViewStep &s : c.steps) v = run_torch(s.op, {v}, s.attrs);
    v.copy_(w.mul(3));
    const at::Tensor loss = y.mul(to_torch(c.cy)).sum().add(v.mul(to_torch(c.cv)).sum());
    const auto grads = torch::autograd::grad({loss}, {x, w}, {}, c10::nullopt, false, /*allow_unused=*/true);
    auto or_zeros = [](const at::Tensor &g, const at::Tensor &like) { return g.defined() ? g : at::zeros_like(like); };
    return InPlaceResult{from_torch(y.detach()), from_torch(v.detach()), from_torch(or_zeros(grads[0], x)),
                         from_torch(or_zeros(grads[1], w))};
  });
}

}  // namespace loom::reference
