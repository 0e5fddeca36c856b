// In-place updates (Tensor::assign), torch's way at the graph level: the
// updated tensor gets a new value node, graphs built earlier keep reading the
// old one, and an update through a view rewrites the view's base and rebuilds
// every live view of it. With autograd, the update is recorded as a node
// (torch's CopyBackwards / CopySlices) that the tensor's gradient now flows
// through.

#include <algorithm>
#include <optional>

#include "loom/tensor.h"
#include "tensor/ops_util.h"
#include "tensor/pending.h"
#include "tensor/record.h"

namespace loom {

using namespace tensor;

// The view replayed over a placeholder buffer (never allocated), its nested
// views composed into one tracker.
shape::ShapeTracker tensor::storage_view(const Shape &base_shape, DType dt,
                                         const shape::PoolFunction<Tensor(const Tensor &)> &replay) {
  Tensor placeholder(buffer_view(uop::Buffer::create(dt, shape_numel(base_shape)), base_shape));
  UOpRef v = replay(placeholder).uop();
  shape::ShapeTracker st = tracker_of(v);
  for (UOpRef cur = base_of(v); cur->op == Op::View; cur = cur->src[0])
    st = st.compose_onto(cur->arg_as<shape::ShapeTracker>());
  return st;
}

namespace {

using ImplPtr = std::shared_ptr<TensorImpl>;

Tensor write_into(const Tensor &base, const Tensor &value, const shape::ShapeTracker &view,
                  std::optional<Op> acc = std::nullopt) {
  return make_tensor(UOp::make(Op::Write, base.dtype(), {base.uop(), value.cast(base.dtype()).uop()},
                               uop::WriteArg{view, -1, acc}));
}

// The base's value with a view's elements replaced by `value`: a copy of the
// base and one store per written element. torch refuses to write through a
// view that repeats an element. `view`, when given, is the view itself: if it
// and the base both read one buffer directly, the view's own tracker is the
// answer and nothing is replayed.
Tensor scatter_into_base(const Tensor &base, const ViewReplay &replay, const Tensor &value,
                         const Tensor *view = nullptr) {
  if (value.numel() == 0) return base;  // an empty view writes nothing
  const uop::UOp *buf = uop::whole_buffer(base.uop().get());
  const bool direct = view && buf && view->uop()->op == Op::View && view->uop()->src[0].get() == buf;
  shape::ShapeTracker replayed;
  const shape::ShapeTracker &st =
      direct ? tracker_of(view->uop()) : (replayed = storage_view(base.shape(), base.dtype(), replay));
  if (st.single_plain())
    for (size_t d = 0; d < value.shape().size(); d++)
      if (value.shape()[d] > 1 && st.views[0].strides[d] == 0)
        throw Error("unsupported operation: more than one element of the written-to tensor refers to a single "
                    "memory location. Please clone() the tensor before performing the operation; view " +
                    shape_str(value.shape()));
  return write_into(base, value, st);
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
  // Each view element's gradient is added at its storage position (as_strided
  // views may repeat a position: they all add up).
  return autograd::record("AsStridedBackward", {base}, value,
                          [replay = view.view_replay, shape = base.shape()](const Tensor &g, const Tensor &) {
                            const auto st = storage_view(shape, g.dtype(), replay);
                            return autograd::Grads{write_into(Tensor::zeros(shape, g.dtype()), g, st, Op::Add)};
                          });
}

// torch's creation meta for views it will not let change in place (nullptr
// for plain views): made without grad, or returned with others (split,
// chunk, unbind).
const char *forbidden_view(const TensorImpl &v) {
  if (!v.differentiable_view) return nullptr;
  if (v.multi_output_view)
    return "A view returned with others (split, chunk, unbind: a function that returns multiple views)";
  if (v.view_made_without_grad) return "A view was created in no_grad mode";
  return nullptr;
}

// Rebuilds every live view of `base` from the base's current value. Views
// through which gradients flow also get a fresh node from the base's current
// one, as torch regenerates a view's grad_fn after its base changed in place.
// A view with no gradient to regenerate that read the base's old realized
// buffer directly is that view's storage tracker over the new value: nothing
// to replay. `old` is the base's value before the update.
void refresh_views(const ImplPtr &base, const UOpRef &old) {
  const uop::UOp *old_buffer = uop::whole_buffer(old.get());
  std::vector<ImplPtr> live;  // replaying registers new views of base: collect first
  for (const auto &w : base->views)
    if (auto v = w.lock()) live.push_back(v);
  const Tensor b = TensorImpl::wrap(base);
  for (const ImplPtr &v : live) {
    // torch will not regenerate such a view's node: recording through it raises from now on.
    if (const char *kind = forbidden_view(*v); kind && (v->grad_fn || base->requires_grad)) {
      v->view_error = kind;
      v->requires_grad = true;
    }
    const bool track = base->requires_grad && v->differentiable_view && !v->view_made_without_grad;
    if (!track && old_buffer && v->uop->op == Op::View && v->uop->src[0].get() == old_buffer) {
      v->uop = view(base->uop, v->uop->arg_as<shape::ShapeTracker>());
      continue;
    }
    autograd::GradModeGuard mode(track);
    const Tensor r = replay_view(b, *v);
    v->uop = r.uop();
    if (track) {
      if (!v->grad_fn && TensorImpl::of(r)->grad_fn) v->node_not_regenerated = true;
      v->grad_fn = TensorImpl::of(r)->grad_fn;
      v->requires_grad = r.requires_grad();
    }
  }
}

// Where a tensor lies in the row-major storage of `base` (its own, or its
// view base's), when torch can tell exactly: one unmasked view laid out
// densely without overlap (torch's is_non_overlapping_and_dense); nullopt
// otherwise, where torch's overlap check gives up too.
std::optional<shape::View> dense_storage_view(const TensorImpl &t, const TensorImpl &base, DType dt) {
  shape::View v;
  if (&t == &base) {
    v = shape::View::create(shape_of(base.uop));
  } else {
    autograd::NoGradGuard no_grad;
    const shape::ShapeTracker st = storage_view(shape_of(base.uop), dt, t.view_replay);
    if (!st.single_plain()) return std::nullopt;
    v = st.views[0];
  }
  if (!non_overlapping_and_dense(v.strides, v.shape)) return std::nullopt;
  return v;
}

// torch's copy_ refuses a source that partly overlaps the tensor written in
// memory (the same range with other strides, or intersecting ranges): it
// would read elements already overwritten.
void check_no_partial_overlap(const TensorImpl &self, const ImplPtr &target, const Tensor &value) {
  const TensorImpl &src = *TensorImpl::of(value);
  if (&src == &self || (src.view_base ? src.view_base : TensorImpl::of(value)) != target) return;
  const auto a = dense_storage_view(self, *target, value.dtype()), b = dense_storage_view(src, *target, value.dtype());
  if (!a || !b || a->numel() == 0 || b->numel() == 0) return;
  const auto [a0, a1] = a->index_bounds();
  const auto [b0, b1] = b->index_bounds();
  const bool same_range = a0 == b0 && a1 == b1;
  if ((same_range && a->strides != b->strides) || (!same_range && a0 <= b1 && b0 <= a1))
    throw Error("unsupported operation: some elements of the input tensor and the written-to tensor refer to a single "
                "memory location. Please clone() the tensor before performing the operation; tensor " +
                shape_str(a->shape) + ", value " + shape_str(b->shape));
}

// torch's checks before an in-place update with grad mode on; `value_grad`:
// the new value requires grad.
void check_update_rules(const Tensor &self, const TensorImpl &impl, bool value_grad) {
  const TensorImpl *base = impl.view_base.get();
  // torch forbids it for views made without grad or returned with others,
  // whenever the update records a gradient (the view's base, the view or the
  // value requires grad).
  if (const char *kind = base ? forbidden_view(impl) : nullptr;
      kind && (base->requires_grad || self.requires_grad() || value_grad))
    throw Error(std::string(kind) + " and is being modified inplace with grad mode enabled; torch forbids it (move "
                "the view and the update both inside a no_grad scope, or update a copy); view " + self.str());
  if ((self.is_leaf() || impl.node_not_regenerated) && self.requires_grad())
    throw Error("a leaf Variable that requires grad is being used in an in-place operation; " + self.str());
  if (!base) return;
  if (impl.differentiable_view && base->requires_grad && !base->grad_fn)
    throw Error("a view of a leaf Variable that requires grad is being used in an in-place operation; view " +
                self.str());
  if (!impl.differentiable_view && value_grad)
    throw Error("assign: an in-place update of a detached tensor from a value that requires grad is not supported; "
                "tensor " + self.str());
}

}  // namespace

void Tensor::check_in_place(const std::vector<Tensor> &operands) const {
  bool value_grad = requires_grad();
  for (const Tensor &o : operands) {
    check_no_partial_overlap(*impl_, impl_->view_base ? impl_->view_base : impl_, o);
    value_grad |= o.requires_grad();
  }
  if (autograd::is_grad_enabled()) check_update_rules(*this, *impl_, value_grad);
}

Tensor &Tensor::assign(const Tensor &value) {
  const bool grad_mode = autograd::is_grad_enabled();
  if (grad_mode) check_update_rules(*this, *impl_, value.requires_grad());
  // The tensor whose value changes: the base when this is a view.
  const ImplPtr target = impl_->view_base ? impl_->view_base : impl_;
  check_no_partial_overlap(*impl_, target, value);
  Tensor v = value.cast(dtype()).expand(shape());  // raises like torch when shapes do not broadcast
  const ViewReplay replay = impl_->view_base ? impl_->view_replay : nullptr;
  const Tensor old = TensorImpl::wrap(target);
  Tensor updated = v;
  if (replay) {
    autograd::NoGradGuard no_grad;
    updated = scatter_into_base(old, replay, v, this);
  } else if (root_of(old.uop())->op == Op::Buffer) {
    // A whole overwrite of a realized tensor: a WRITE, so the scheduler can
    // store into the existing buffer when nothing else still reads it.
    autograd::NoGradGuard no_grad;
    updated = write_into(old, v, shape::ShapeTracker::from_shape(shape()));
  } else {
    // A whole overwrite of an op's result: torch's storage stays the tensor's
    // own, laid out as it was (a broadcast, padded or flipped value would
    // give it other strides, and contiguous() would copy).
    updated = stored_as(v, clone_order(old));
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
  const UOpRef before = target->uop;
  target->uop = updated.uop();
  ++*target->version_counter();
  refresh_views(target, before);
  note_update(target, before);
  return *this;
}

}  // namespace loom
