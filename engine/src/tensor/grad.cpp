// Tensor's autograd-facing methods: requires_grad, .grad, retain_grad,
// detach, version. (Tensor::backward is the backward engine's:
// autograd/engine.cpp.)
#include "tensor/record.h"

namespace loom {

bool Tensor::requires_grad() const { return impl_->requires_grad; }

Tensor &Tensor::requires_grad_(bool on) {
  if (!is_leaf())
    throw Error("requires_grad_: you can only change requires_grad flags of leaf variables; " + str() +
                " has grad_fn " + grad_fn_name());
  if (on && !is_float(dtype()))
    throw Error(std::string("only Tensors of floating point dtype can require gradients; got ") + dtype_name(dtype()));
  impl_->requires_grad = on;
  return *this;
}

bool Tensor::is_leaf() const { return !impl_->grad_fn; }

std::optional<Tensor> Tensor::grad() const {
  if (!impl_->grad) return std::nullopt;
  return TensorImpl::wrap(impl_->grad);
}

void Tensor::set_grad(std::optional<Tensor> g) {
  if (g && (g->shape() != shape() || g->dtype() != dtype()))
    throw Error("assigned grad has data of a different size or type: " + g->str() + " for " + str());
  impl_->grad = g ? TensorImpl::of(*g) : nullptr;
}

void Tensor::retain_grad() const {
  if (!impl_->requires_grad) throw Error("can't retain_grad on Tensor that has requires_grad=False");
  if (is_leaf() || retains_grad()) return;
  impl_->grad_fn->retained.push_back(impl_);
}

bool Tensor::retains_grad() const {
  if (!impl_->grad_fn) return false;
  for (const auto &r : impl_->grad_fn->retained)
    if (r.lock() == impl_) return true;
  return false;
}

std::string Tensor::grad_fn_name() const {
  impl_->node_not_regenerated = false;  // torch regenerates a view's node when asked for it
  return impl_->grad_fn ? impl_->grad_fn->name : "";
}

Tensor Tensor::detach() const {
  auto impl = TensorImpl::make();
  impl->uop = impl_->uop;
  // Shares storage like torch's, but gradients do not flow back through it.
  autograd::register_view(impl, impl_, [](const Tensor &t) { return t; }, false);
  return TensorImpl::wrap(impl);
}

int64_t Tensor::version() const { return impl_->version ? *impl_->version : 0; }

}  // namespace loom
