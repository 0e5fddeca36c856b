// In-place updates (Tensor::assign), torch's way at the graph level: the
// updated tensor gets a new value node, graphs built earlier keep reading the
// old one, and an update through a view rewrites the view's base and rebuilds
// every live view of it. With autograd, the update is recorded as a node
// (torch's CopyBackwards / CopySlices) that the tensor's gradient now flows
// through.
#include <cmath>

#include "autograd/impl.h"
#include "loom/tensor.h"
#include "tensor/ops_util.h"

namespace loom {

namespace {

using ImplPtr = std::shared_ptr<TensorImpl>;

// Which base element each view element is: the view replayed over the base's
// flat indices.
Tensor base_index(const Shape &base_shape, const ViewReplay &replay) {
  return replay(Tensor::arange(shape_numel(base_shape)).reshape(base_shape));
}
// (m, n) one-hot of the m view elements over the n base elements.
Tensor one_hot_hits(const Tensor &index, int64_t n) {
  return index.reshape({index.numel(), 1}).eq(Tensor::arange(n).reshape({1, n}));
}

// The base's value with a view's elements replaced by `value`; a one-hot max
// places the new values (bit-exact: -0.0 and NaN survive). torch refuses to
// write through a view that repeats an element.
Tensor scatter_into_base(const Tensor &base, const ViewReplay &replay, const Tensor &value) {
  const int64_t n = base.numel(), m = value.numel();
  if (m == 0) return base;  // an empty view writes nothing
  Tensor index = base_index(base.shape(), replay);
  // The replayed view of the base's indices shows the view's strides in the base.
  const auto st = tensor::tracker_of(index.uop());
  if (st.single_plain())
    for (size_t d = 0; d < index.shape().size(); d++)
      if (index.shape()[d] > 1 && st.views[0].strides[d] == 0)
        throw Error("unsupported operation: more than one element of the written-to tensor refers to a single "
                    "memory location. Please clone() the tensor before performing the operation; view " +
                    shape_str(value.shape()));
  const DType dt = base.dtype();
  Tensor hit = one_hot_hits(index, n);
  Tensor covered = hit.cast(DType::Int64).sum({0}).gt(Tensor::zeros({}, DType::Int64));
  const double lowest = is_float(dt) ? -INFINITY : dtype_lowest(dt);
  Tensor placed = hit.where(value.reshape({m, 1}), Tensor::full({}, lowest, dt)).amax({0});
  return covered.where(placed, base.reshape({n})).reshape(base.shape());
}

// A view rebuilt from its base after the base changed in place. Where the
// way from the base has an as_strided step, the gradient goes straight to the
// base's elements (torch regenerates the view's grad_fn as one as_strided of
// the base); elsewhere the movement ops are replayed, each with its own rule.
Tensor replay_view(const Tensor &base, const TensorImpl &view) {
  if (!view.view_addresses_storage || !autograd::is_grad_enabled()) return view.view_replay(base);
  Tensor value;
  {
    autograd::NoGradGuard no_grad;
    value = view.view_replay(base);
  }
  return autograd::record("AsStridedBackward", {base}, value,
                          [replay = view.view_replay, shape = base.shape()](const Tensor &g, const Tensor &) {
                            Tensor hit = one_hot_hits(base_index(shape, replay), shape_numel(shape));
                            Tensor zero = Tensor::zeros({}, g.dtype());
                            return autograd::Grads{hit.where(g.reshape({g.numel(), 1}), zero).sum({0}).reshape(shape)};
                          });
}

// Rebuilds every live view of `base` from the base's current value. Views
// through which gradients flow also get a fresh node from the base's current
// one, as torch regenerates a view's grad_fn after its base changed in place.
void refresh_views(const ImplPtr &base) {
  std::vector<ImplPtr> live;  // replaying registers new views of base: collect first
  for (const auto &w : base->views)
    if (auto v = w.lock()) live.push_back(v);
  const Tensor b = TensorImpl::wrap(base);
  for (const ImplPtr &v : live) {
    const bool track = base->requires_grad && v->differentiable_view && !v->view_made_without_grad;
    autograd::GradModeGuard mode(track);
    const Tensor r = replay_view(b, *v);
    v->uop = r.uop();
    if (track) {
      v->grad_fn = TensorImpl::of(r)->grad_fn;
      v->requires_grad = r.requires_grad();
    }
  }
}

// torch's checks before an in-place update with grad mode on.
void check_in_place(const Tensor &self, const TensorImpl &impl, const Tensor &value) {
  if (self.is_leaf() && self.requires_grad())
    throw Error("a leaf Variable that requires grad is being used in an in-place operation; " + self.str());
  const TensorImpl *base = impl.view_base.get();
  if (!base) return;
  if (impl.differentiable_view && base->requires_grad) {
    if (!base->grad_fn)
      throw Error("a view of a leaf Variable that requires grad is being used in an in-place operation; view " +
                  self.str());
    if (impl.view_made_without_grad)
      throw Error("A view was created in no_grad mode and is being modified inplace with grad mode enabled. Given "
                  "that this use case is ambiguous and error-prone, it is forbidden. Move both the view and the "
                  "in-place update inside the no_grad scope, or both outside it; view " + self.str());
  }
  if (!impl.differentiable_view && value.requires_grad())
    throw Error("assign: an in-place update of a detached tensor from a value that requires grad is not supported; "
                "tensor " + self.str());
}

}  // namespace

Tensor &Tensor::assign(const Tensor &value) {
  const bool grad_mode = autograd::is_grad_enabled();
  if (grad_mode) check_in_place(*this, *impl_, value);
  Tensor v = value.cast(dtype()).expand(shape());  // raises like torch when shapes do not broadcast
  // The tensor whose value changes: the base when this is a view.
  const ImplPtr target = impl_->view_base ? impl_->view_base : impl_;
  const ViewReplay replay = impl_->view_base ? impl_->view_replay : nullptr;
  const Tensor old = TensorImpl::wrap(target);
  Tensor updated = v;
  if (replay) {
    autograd::NoGradGuard no_grad;
    updated = scatter_into_base(old, replay, v);
  }
  const bool tracked_base = replay ? impl_->differentiable_view && target->requires_grad : target->requires_grad;
  if (grad_mode && (v.requires_grad() || tracked_base)) {
    // d(new)/d(old) keeps what the update did not overwrite; the value gets the rest.
    const Shape written = shape();
    Tensor node = autograd::record(replay ? "CopySlices" : "CopyBackwards", {old, v}, updated,
                                   [replay, written](const Tensor &g, const Tensor &) {
                                     if (!replay) return autograd::Grads{Tensor::zeros(g.shape(), g.dtype()), g};
                                     Tensor kept = scatter_into_base(g, replay, Tensor::zeros(written, g.dtype()));
                                     return autograd::Grads{kept, replay(g)};
                                   });
    target->grad_fn = TensorImpl::of(node)->grad_fn;
    target->requires_grad = true;
  }
  target->uop = updated.uop();
  ++*target->version;
  refresh_views(target);
  return *this;
}

}  // namespace loom
