// The backward engine: reverse topological walk over recorded nodes, gradient
// accumulation, and the Tensor methods that expose it.
#include <algorithm>
#include <utility>

#include "autograd/impl.h"
#include "tensor/graph.h"
#include "tensor/ops_util.h"
#include "tensor/pending.h"
#include "uop/node_map.h"

namespace loom {
namespace autograd {

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

namespace {
[[noreturn]] void modified_in_place(const Tensor &value, const std::string &op, int64_t now, int64_t saved) {
  throw Error(std::string("one of the variables needed for gradient computation has been modified by an inplace "
                          "operation: [") + dtype_name(value.dtype()) + " " + shape_str(value.shape()) +
              "], which is output 0 of " + op + ", is at version " + std::to_string(now) + "; expected version " +
              std::to_string(saved) + " instead.");
}
}  // namespace

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

namespace {

// Nodes reachable from the roots, each before the nodes its inputs come from.
std::vector<Node *> reverse_topological(const std::vector<Edge> &roots) {
  std::vector<Node *> order;
  uop::NodeSet seen;
  std::vector<std::pair<Node *, size_t>> stack;
  for (const Edge &r : roots) {
    if (!r.fn || !seen.insert(r.fn.get())) continue;
    stack.push_back({r.fn.get(), 0});
    while (!stack.empty()) {
      auto &[node, next] = stack.back();
      if (next < node->inputs.size()) {
        Node *in = node->inputs[next++].fn.get();
        if (in && seen.insert(in)) stack.push_back({in, 0});
        continue;
      }
      order.push_back(node);
      stack.pop_back();
    }
  }
  std::reverse(order.begin(), order.end());
  return order;
}

Tensor default_grad_output(const Tensor &out) {
  if (out.numel() != 1)
    throw Error("grad can be implicitly created only for scalar outputs; got an output of shape " +
                shape_str(out.shape()));
  return Tensor::ones(out.shape(), out.dtype());
}

// The gradient reaching each edge (a node's output or a leaf), in the order
// they were first reached (so what backward() realizes is scheduled
// deterministically).
struct GradMap {
  uop::NodeMap<size_t> index;
  std::vector<std::pair<Edge, Tensor>> items;

  void accumulate(const Edge &e, const Tensor &g) {
    auto [i, fresh] = index.insert(e.key());
    if (fresh) {
      *i = items.size();
      items.emplace_back(e, g);
    } else {
      items[*i].second = items[*i].second.add(g);
    }
  }
  const Tensor *find(const void *key) const {
    const size_t *i = index.find(key);
    return i ? &items[*i].second : nullptr;
  }
};

[[noreturn]] void backward_twice() {
  throw Error("Trying to backward through the graph a second time (or directly access saved tensors after they have "
              "already been freed). Saved intermediate values of the graph are freed when you call .backward() or "
              "autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or "
              "if you need to access saved tensors after calling backward.");
}

// Runs the nodes and returns the gradient reaching every edge. Without
// retain_graph, a node that read saved values frees them (its rule too).
GradMap run_backward(const std::vector<Tensor> &outputs, const std::vector<Tensor> &grad_outputs, bool retain_graph) {
  NoGradGuard guard;
  GradMap grads;
  std::vector<Edge> roots;
  for (size_t i = 0; i < outputs.size(); i++) {
    const Tensor &out = outputs[i];
    if (!out.requires_grad())
      throw Error("element " + std::to_string(i) + " of tensors does not require grad and does not have a grad_fn");
    Tensor g = i < grad_outputs.size() ? grad_outputs[i] : default_grad_output(out);
    if (g.shape() != out.shape())
      throw Error("Mismatch in shape: grad_output[" + std::to_string(i) + "] has a shape of " + shape_str(g.shape()) +
                  " and output[" + std::to_string(i) + "] has a shape of " + shape_str(out.shape()) + ".");
    roots.push_back(edge_of(out));
    grads.accumulate(roots.back(), g.detach().cast(out.dtype()));
  }
  for (Node *node : reverse_topological(roots)) {
    const Tensor *g_out = grads.find(node);
    if (!g_out) continue;  // no gradient reached this node
    if (node->freed) backward_twice();
    if (node->out_counter && *node->out_counter != node->out_version)
      modified_in_place(Tensor(node->out), node->name, *node->out_counter, node->out_version);
    for (const Saved &s : node->saved_inputs) s.get();
    Grads in_grads = node->backward(Tensor(*g_out), Tensor(node->out));
    // Without retain_graph the node lets go of the forward's values, as
    // torch's releases its saved variables: a node that saved some frees
    // them (a second backward through it raises) and its output; any other
    // keeps zeros of its output's shape and dtype in the output's place (its
    // rule reads no value of the output), so that the forward's intermediates
    // it reached are no longer held and realize as transients.
    if (!retain_graph && node->saves) {
      node->freed = true;
      node->backward = nullptr;
      node->saved_inputs.clear();
      node->out = nullptr;
    } else if (!retain_graph) {
      node->out = uop::scalar_tensor(0, node->out->dtype, shape_of(node->out));
    }
    LOOM_CHECK(in_grads.size() == node->inputs.size(),
               std::string(node->name) + " returned " + std::to_string(in_grads.size()) + " gradients for " +
                   std::to_string(node->inputs.size()) + " inputs");
    for (size_t i = 0; i < node->inputs.size(); i++) {
      if (!node->inputs[i] || !in_grads[i]) continue;
      Tensor g = sum_to(*in_grads[i], node->input_shapes[i]).cast(node->input_dtypes[i]);
      grads.accumulate(node->inputs[i], g);
    }
  }
  take_saved_count();  // the backward rules' own ops: no node of theirs is recorded
  return grads;
}

}  // namespace

std::vector<Tensor> grad(const std::vector<Tensor> &outputs, const std::vector<Tensor> &inputs,
                         const std::vector<Tensor> &grad_outputs, bool allow_unused, std::vector<bool> *used,
                         bool retain_graph) {
  if (!grad_outputs.empty() && grad_outputs.size() != outputs.size())
    throw Error("grad: got " + std::to_string(grad_outputs.size()) + " grad_outputs for " +
                std::to_string(outputs.size()) + " outputs");
  for (size_t i = 0; i < inputs.size(); i++)
    if (!inputs[i].requires_grad())
      throw Error("One of the differentiated Tensors (input " + std::to_string(i) + ") does not require grad");
  auto grads = run_backward(outputs, grad_outputs, retain_graph);
  std::vector<Tensor> result;
  if (used) used->assign(inputs.size(), true);
  for (size_t i = 0; i < inputs.size(); i++) {
    const Tensor *g = grads.find(edge_of(inputs[i]).key());
    if (!g && used) (*used)[i] = false;
    if (!g && !allow_unused)
      throw Error("One of the differentiated Tensors (input " + std::to_string(i) +
                  ") appears to not have been used in the graph. Set allow_unused=True if this is the desired "
                  "behavior.");
    if (!g) result.push_back(Tensor::zeros(inputs[i].shape(), inputs[i].dtype()));
    // A gradient that records nothing is returned as a value of its own, not
    // as a view of an intermediate: a view would keep its base's lazy graph
    // (the forward's saved values) alive after the gradient is realized.
    else result.push_back(g->requires_grad() ? *g : Tensor(g->uop()));
  }
  return result;
}

}  // namespace autograd

using autograd::NoGradGuard;

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

namespace {
// The dim order of a first .grad: torch's AccumulateGrad gives a leaf the
// leaf's strides where it is non-overlapping and dense, else row-major; a
// retained non-leaf's gradient is cloned row-major.
Dims first_grad_order(const Tensor &t, bool leaf) {
  const std::vector<int64_t> strides = t.strides();
  if (leaf && tensor::non_overlapping_and_dense(strides, t.shape())) return tensor::iterator_order({strides}, t.shape());
  return tensor::row_major_order(t.ndim());
}
}  // namespace

void Tensor::backward(std::optional<Tensor> gradient, bool retain_graph) const {
  std::vector<Tensor> gos;
  if (gradient) gos.push_back(*gradient);
  auto grads = autograd::run_backward({*this}, gos, retain_graph);
  // Accumulate into the leaves that require grad, then realize them in one schedule.
  std::vector<TensorImpl *> leaves;
  std::vector<UOpRef> values;
  NoGradGuard guard;
  auto keep = [&](TensorImpl *impl, const Tensor &g, bool leaf) {
    leaves.push_back(impl);
    Tensor acc;
    if (!impl->grad) {
      const Tensor t = TensorImpl::wrap(std::shared_ptr<TensorImpl>(std::shared_ptr<TensorImpl>{}, impl));
      acc = tensor::stored_as(g, first_grad_order(t, leaf));
    } else {  // a leaf's adds in place (keeping its layout), a retained one's out of place
      const Tensor before = TensorImpl::wrap(impl->grad);
      acc = leaf ? tensor::stored_as(before.add(g), tensor::clone_order(before)) : before.add(g);
    }
    values.push_back(acc.uop());
  };
  for (auto &[edge, g] : grads.items) {
    if (edge.leaf) keep(edge.leaf.get(), g, true);
    else
      for (const auto &r : edge.fn->retained)
        if (auto impl = r.lock(); impl && impl->grad_fn == edge.fn) keep(impl.get(), g, false);
  }
  // The output itself is realized with the gradients, as torch computed it in the forward: a
  // later item() of the loss reads its buffer instead of scheduling its reduction again.
  values.push_back(uop());
  auto realized = tensor::realize_with_updates(values);
  const UOpRef before = impl_->uop;
  impl_->uop = realized.back();
  tensor::rebase_views(*impl_, before, impl_->uop);
  for (size_t i = 0; i < leaves.size(); i++) {
    auto impl = TensorImpl::make();
    impl->uop = realized[i];
    leaves[i]->grad = impl;
  }
}

int64_t Tensor::version() const { return impl_->version ? *impl_->version : 0; }

}  // namespace loom
