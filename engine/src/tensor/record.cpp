// The recording side of autograd (tensor/record.h): grad mode, saved values,
// nodes and views.
#include <algorithm>
#include <utility>

#include "tensor/ops_util.h"
#include "tensor/record.h"

namespace loom::autograd {

namespace {
thread_local bool grad_enabled = true;
thread_local int saved_made = 0;
}

bool is_grad_enabled() { return grad_enabled; }
void set_grad_enabled(bool enabled) { grad_enabled = enabled; }

int take_saved_count() { return std::exchange(saved_made, 0); }

Saved::Saved(const Tensor &t, const char *op, bool checked) : op_(op), checked_(checked && grad_enabled) {
  // With grad mode off the op records no node, so nothing reads this value
  // (the capture is made as the op's backward rule is written, before the op
  // knows): nothing is kept.
  if (!grad_enabled) return;
  if (checked) {
    value_ = t.uop();
    counter_ = TensorImpl::of(t)->version_counter();
    version_ = *counter_;
    saved_made++;
  } else {
    const Shape &shape = t.shape();
    shape_.assign(shape.begin(), shape.end());
    dtype_ = t.dtype();
  }
}

[[noreturn]] void modified_in_place(const Tensor &value, const std::string &op, int64_t now, int64_t saved) {
  throw Error(std::string("one of the variables needed for gradient computation has been modified by an inplace "
                          "operation: [") + dtype_name(value.dtype()) + " " + shape_str(value.shape()) +
              "], which is output 0 of " + op + ", is at version " + std::to_string(now) + "; expected version " +
              std::to_string(saved) + " instead.");
}

Tensor Saved::get() const {
  if (!checked_) return Tensor(uop::scalar_tensor(0, dtype_, Shape(shape_.begin(), shape_.end())));
  if (*counter_ != version_) modified_in_place(Tensor(value_), op_, *counter_, version_);
  return Tensor(value_);
}

Tensor saves_result(const Tensor &result) {
  const auto &impl = TensorImpl::of(result);
  if (impl->grad_fn) {
    impl->grad_fn->out_counter = impl->version_counter();
    impl->grad_fn->out_version = *impl->grad_fn->out_counter;
    impl->grad_fn->saves = true;
  }
  return result;
}

Tensor own_tensor(const Tensor &r, const char *name, const Dims *order) {
  return record(name, {r}, order ? tensor::copy_with_layout(r, *order) : Tensor(uop::copy_point(r.uop())),
                [](const Tensor &g, const Tensor &) { return Grads{g}; });
}

Tensor saves_inputs(const Tensor &result, const std::vector<Tensor> &inputs, const char *op) {
  // torch's op returns a tensor of its own, with one node: never a view of an
  // intermediate (an in-place write through one would rewrite the
  // intermediate and regenerate the view's node without the saved inputs),
  // laid out as the view is (conv2d's channels_last result).
  const Tensor r = TensorImpl::of(result)->view_base ? tensor::laid_out(result, tensor::clone_order(result), op) : result;
  if (const auto &node = TensorImpl::of(r)->grad_fn) {
    for (const Tensor &t : inputs) node->saved_inputs.emplace_back(t, op);
    node->saves |= !inputs.empty();
  }
  take_saved_count();  // counted just now, for this node
  return r;
}

void register_view(const std::shared_ptr<TensorImpl> &impl, const std::shared_ptr<TensorImpl> &of, ViewReplay replay,
                   bool differentiable) {
  impl->version = of->version_counter();
  impl->view_made_without_grad = !grad_enabled;
  if (of->view_base) {  // a view of a view: replay from the root base
    impl->view_base = of->view_base;
    impl->view_replay = [first = of->view_replay, then = std::move(replay)](const Tensor &t) { return then(first(t)); };
    impl->differentiable_view = differentiable && of->differentiable_view;
    impl->view_made_without_grad |= of->view_made_without_grad;
    impl->multi_output_view = of->multi_output_view;
    impl->view_addresses_storage = of->view_addresses_storage;
  } else {
    impl->view_base = of;
    impl->view_replay = std::move(replay);
    impl->differentiable_view = differentiable;
  }
  auto &views = impl->view_base->views;
  views.erase(std::remove_if(views.begin(), views.end(), [](const auto &w) { return w.expired(); }), views.end());
  views.push_back(impl);
}

Edge edge_of(const Tensor &t) {
  const auto &impl = TensorImpl::of(t);
  if (!impl->requires_grad) return {};
  if (impl->view_error)
    throw Error(std::string(impl->view_error) + " and its base or another view of its base has been modified inplace; "
                "view " + t.str());
  impl->node_not_regenerated = false;  // an op using the view: torch regenerates its node here
  if (impl->grad_fn) return {impl->grad_fn, nullptr};
  return {nullptr, impl};
}

bool records_node(Inputs inputs, const Tensor &out) {
  return grad_enabled && is_float(out.dtype()) &&
         std::any_of(inputs.begin(), inputs.end(), [](const Tensor &t) { return t.requires_grad(); });
}

namespace {
// A handle only `out` holds, with nothing of a tensor's history yet (what a
// forward's make_tensor returns): the result can take it over.
bool plain_new_handle(const std::shared_ptr<TensorImpl> &impl) {
  return impl.use_count() == 1 && !impl->requires_grad && !impl->grad_fn && !impl->grad && !impl->version &&
         !impl->view_base && impl->views.empty() && !impl->differentiable_view && !impl->view_made_without_grad &&
         !impl->multi_output_view && !impl->view_error && !impl->node_not_regenerated && !impl->view_addresses_storage;
}
}  // namespace

Tensor record_node(const char *name, Inputs inputs, Tensor out, BackwardFn backward,
                   ViewReplay view, bool saves) {
  const bool reuse = plain_new_handle(TensorImpl::of(out));
  std::shared_ptr<TensorImpl> impl = reuse ? TensorImpl::of(out) : TensorImpl::make();
  if (!reuse) impl->uop = out.uop();
  if (view && !inputs.empty()) register_view(impl, TensorImpl::of(inputs[0]), std::move(view));
  if (!records_node(inputs, out)) {
    if (!impl->view_base && !reuse) impl->version = TensorImpl::of(out)->version_counter();
    return TensorImpl::wrap(std::move(impl));
  }
  auto node = std::allocate_shared<Node>(shape::PoolAlloc<Node>());
  node->name = name;
  node->inputs.reserve(inputs.size());
  node->input_shapes.reserve(inputs.size());
  node->input_dtypes.reserve(inputs.size());
  for (const Tensor &t : inputs) {
    node->inputs.push_back(edge_of(t));
    node->input_shapes.push_back(t.shape());
    node->input_dtypes.push_back(t.dtype());
  }
  node->backward = std::move(backward);
  node->saves = saves;
  node->out = out.uop();
  impl->requires_grad = true;
  impl->grad_fn = std::move(node);
  return TensorImpl::wrap(std::move(impl));
}

Tensor sum_to(const Tensor &g, const Shape &shape) {
  if (g.shape() == shape) return g;
  const int64_t lead = g.ndim() - static_cast<int64_t>(shape.size());
  LOOM_CHECK(lead >= 0, "gradient " + shape_str(g.shape()) + " cannot sum to " + shape_str(shape));
  Dims dims;
  for (int64_t i = 0; i < g.ndim(); i++)
    if (i < lead || (shape[i - lead] == 1 && g.shape()[i] != 1)) dims.push_back(i);
  Tensor r = dims.empty() ? g : g.sum(dims, true);
  return r.reshape(shape);
}

}  // namespace loom::autograd
