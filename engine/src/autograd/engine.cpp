// The backward engine: the reverse topological walk over recorded nodes
// (tensor/record.h), gradient accumulation, torch.autograd.grad and
// torch.autograd.backward.
#include <algorithm>
#include <utility>

#include "tensor/graph.h"
#include "tensor/ops_util.h"
#include "tensor/pending.h"
#include "tensor/record.h"
#include "uop/node_map.h"

namespace loom::autograd {

namespace {

std::vector<std::function<void()>> &callbacks() {
  thread_local std::vector<std::function<void()>> queued;
  return queued;
}

void run_callbacks() {
  std::vector<std::function<void()>> now;
  now.swap(callbacks());
  for (auto &fn : now) fn();
}

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

// The dim order of a first .grad: torch's AccumulateGrad gives a leaf the
// leaf's strides where it is non-overlapping and dense, else row-major; a
// retained non-leaf's gradient is cloned row-major.
Dims first_grad_order(const Tensor &t, bool leaf) {
  const std::vector<int64_t> strides = t.strides();
  if (leaf && tensor::non_overlapping_and_dense(strides, t.shape())) return tensor::iterator_order({strides}, t.shape());
  return tensor::row_major_order(t.ndim());
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

void backward(const std::vector<Tensor> &tensors, const std::vector<Tensor> &grad_tensors, bool retain_graph) {
  if (!grad_tensors.empty() && grad_tensors.size() != tensors.size())
    throw Error("backward: got " + std::to_string(grad_tensors.size()) + " grad_tensors for " +
                std::to_string(tensors.size()) + " tensors");
  auto grads = run_backward(tensors, grad_tensors, retain_graph);
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
  // The outputs themselves are realized with the gradients, as torch computed them in the forward:
  // a later item() of the loss reads its buffer instead of scheduling its reduction again.
  for (const Tensor &t : tensors) values.push_back(t.uop());
  auto realized = tensor::realize_with_updates(values);
  for (size_t i = 0; i < tensors.size(); i++) {
    TensorImpl &impl = *TensorImpl::of(tensors[i]);
    const UOpRef before = impl.uop;
    impl.uop = realized[leaves.size() + i];
    tensor::rebase_views(impl, before, impl.uop);
  }
  for (size_t i = 0; i < leaves.size(); i++) {
    auto impl = TensorImpl::make();
    impl->uop = realized[i];
    leaves[i]->grad = impl;
  }
  run_callbacks();
}

void queue_callback(std::function<void()> fn) { callbacks().push_back(std::move(fn)); }

}  // namespace loom::autograd

namespace loom {

// torch.Tensor.backward is torch.autograd.backward of the one tensor: the
// backward engine's, so tensor/ needs nothing of this stage.
void Tensor::backward(std::optional<Tensor> gradient, bool retain_graph) const {
  std::vector<Tensor> grads;
  if (gradient) grads.push_back(*gradient);
  autograd::backward({*this}, grads, retain_graph);
}

}  // namespace loom
