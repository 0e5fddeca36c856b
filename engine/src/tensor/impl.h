// What a Tensor handle points at: its value (a UOp) and the autograd state
// torch keeps beside it (grad_fn, .grad, the version counter, view links).
// The recording side that fills it is tensor/record.h.
#pragma once
#include <memory>
#include <vector>

#include "loom/tensor.h"
#include "shape/pool.h"
#include "shape/pool_function.h"
#include "uop/uop.h"

namespace loom {

namespace autograd {
struct Node;
}
// Rebuilds a view from its base (torch's view replay): the movement ops from
// the base's value to the view's.
using ViewReplay = shape::PoolFunction<Tensor(const Tensor &)>;

struct TensorImpl {
  UOpRef uop;
  bool requires_grad = false;
  std::shared_ptr<autograd::Node> grad_fn;  // null for leaves
  std::shared_ptr<TensorImpl> grad;         // accumulated by backward() (leaves)
  // Shared by a tensor and its views (torch's version counter): in-place
  // updates bump it, and saved tensors check it when backward reads them.
  // Made on first use (most handles are temporaries nobody versions); null
  // reads as version 0.
  std::shared_ptr<int64_t> version;
  const std::shared_ptr<int64_t> &version_counter() {
    if (!version) version = std::allocate_shared<int64_t>(shape::PoolAlloc<int64_t>(), 0);
    return version;
  }
  // A view's base (the tensor whose storage it shares) and how to rebuild it
  // from the base; the base lists its live views. An in-place update of either
  // rewrites the base and rebuilds every view, so all of them see it.
  std::shared_ptr<TensorImpl> view_base;
  ViewReplay view_replay;
  std::vector<std::weak_ptr<TensorImpl>> views;
  // Whether gradients flow between the view and its base (false for detach(),
  // which only shares storage), and whether the view was made under no_grad
  // (torch forbids updating such a view in place with grad mode on).
  bool differentiable_view = false;
  bool view_made_without_grad = false;
  // One of several views returned together (split, chunk, unbind) in grad
  // mode, or a view of one: torch's MULTI_OUTPUT_NODE views, which must not be
  // modified in place where a gradient is recorded.
  bool multi_output_view = false;
  // Set when the base of such a view (multi-output or made without grad)
  // changed in place while a gradient could flow through the view: torch's
  // grad_fn() then refuses to regenerate its node, so any op recording a
  // gradient through it raises (`view_error` names the view's kind).
  const char *view_error = nullptr;
  // A view whose base began to require grad after the view was made (an
  // in-place update gave the base a node), not used by a recorded op or asked
  // for its grad_fn since. torch has no node for such a view until one of
  // those regenerates it, so an in-place write through it raises torch's
  // leaf error; loom gives it its node at once (for the gradient) and keeps
  // this mark for the check.
  bool node_not_regenerated = false;
  // An as_strided step on the way from the base: the view may reach base
  // elements outside the step before it, so after an in-place update its
  // gradient goes straight to the base (torch's regenerated AsStridedBackward).
  bool view_addresses_storage = false;

  // A new impl, from the graph's pool (shape/pool.h).
  static std::shared_ptr<TensorImpl> make() { return std::allocate_shared<TensorImpl>(shape::PoolAlloc<TensorImpl>()); }
  static const std::shared_ptr<TensorImpl> &of(const Tensor &t) { return t.impl_; }
  static Tensor wrap(std::shared_ptr<TensorImpl> impl) { return Tensor(std::move(impl)); }
};

}  // namespace loom
