// The recording side of autograd: ops run their forward with recording off
// and attach one Node whose backward rule maps the output's gradient to their
// inputs' gradients. The ops of tensor/ and nn/ record through it; the
// backward engine that walks the nodes is autograd/.
#pragma once
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "loom/autograd.h"
#include "tensor/impl.h"

namespace loom {
namespace autograd {

using Grads = std::vector<std::optional<Tensor>>;
// (gradient of the output, the output's value) -> one gradient per input, in
// any shape that broadcasts to the input's (the engine sums it down and casts
// it to the input's dtype); nullopt where the input gets none. Only a rule
// whose node saves the result (saves_result) may read the output's values;
// the others get its shape and dtype (after a backward without
// retain_graph, zeros stand in for it).
using BackwardFn = shape::PoolFunction<Grads(const Tensor &grad, const Tensor &out)>;

// Where a gradient goes: the node that produced an input (non-leaves), or the
// leaf itself. Edges point at nodes rather than at tensors, so an in-place
// update that gives a tensor a new node leaves graphs built earlier intact.
struct Edge {
  std::shared_ptr<Node> fn;
  std::shared_ptr<TensorImpl> leaf;
  explicit operator bool() const { return fn || leaf; }
  const void *key() const { return fn ? static_cast<const void *>(fn.get()) : leaf.get(); }
};
// The edge a gradient for `t` follows now; empty when t does not require grad.
Edge edge_of(const Tensor &t);

// A tensor a backward rule reads: its value at record time, and the version
// counter that must not have moved when backward runs (torch's check).
// `checked` is false where the value only serves the gradient of an input
// that needs none (or a rule that ignores it): torch does not save it then,
// so it does not raise either, and it holds no value: get() gives zeros of
// its shape and dtype, so the node does not keep the forward's values alive.
// Made with grad mode off (no node will hold it), it keeps nothing at all.
class Saved {
 public:
  Saved(const Tensor &t, const char *op, bool checked = true);
  Tensor get() const;

 private:
  UOpRef value_;  // checked only
  std::shared_ptr<int64_t> counter_;
  int64_t version_ = 0;
  const char *op_;
  bool checked_;
  shape::PoolVector<int64_t> shape_;  // unchecked only (from the pool: most saved values are unchecked)
  DType dtype_ = DType::Float32;
};

// torch's error for a saved value (`value`, saved by `op` at version `saved`)
// that an in-place update moved to version `now` before backward read it.
[[noreturn]] void modified_in_place(const Tensor &value, const std::string &op, int64_t now, int64_t saved);

// A node's per-input lists come from the graph's pool, as the node does.
template <typename T>
using NodeList = shape::PoolVector<T>;

struct Node {
  const char *name = "";  // a string literal (the op's torch name)
  NodeList<Edge> inputs;  // empty where no gradient is needed
  NodeList<Shape> input_shapes;
  NodeList<DType> input_dtypes;
  BackwardFn backward;
  UOpRef out;  // the output's value when recorded (a UOp, so the node does not own its output's impl)
  // Set by saves_result(): the backward reads the output, whose version must
  // not have moved when it runs (checked before backward is called).
  std::shared_ptr<int64_t> out_counter;
  int64_t out_version = 0;
  // Set by saves_inputs(): inputs of a composite op that torch's one node
  // saves, checked with the output's (the tensors the node's backward reads
  // may be copies of them, with counters of their own).
  NodeList<Saved> saved_inputs;
  // Whether the backward reads saved values (a Saved it holds, saves_result,
  // saves_inputs): a backward without retain_graph then frees them, as
  // torch's does, and a later backward through the node raises.
  bool saves = false;
  bool freed = false;
  // Tensors this node made that asked to keep their gradient (retain_grad()).
  std::vector<std::weak_ptr<TensorImpl>> retained;
};

// An op's inputs as record() and apply() read them, during the call only:
// a vector's elements, or a braced list's (which then needs no vector).
using Inputs = std::span<const Tensor>;
inline Inputs inputs_of(std::initializer_list<Tensor> l) { return Inputs(l.begin(), l.size()); }

// How many checked Saved values were made since the last call: an op's
// backward rule captures its Saved values before the op records its node.
int take_saved_count();

// Attaches a node to `out` when grad mode is on, `out` is floating point and
// some input requires grad. Returns the handle to give the caller (a fresh
// impl, so a forward that returned one of its inputs does not touch it; `out`'s
// own impl when nothing else holds it and it is a plain new handle, as the
// result of a forward usually is).
// `view` (set for movement ops that torch implements as views): rebuilds out
// from inputs[0]; out then shares inputs[0]'s storage and version counter.
// The backward rule is made a BackwardFn only when a node will hold it.
// `saves`: whether the backward rule holds Saved values (by default, whether
// any were made since the last take_saved_count()).
bool records_node(Inputs inputs, const Tensor &out);
Tensor record_node(const char *name, Inputs inputs, Tensor out, BackwardFn backward,
                   ViewReplay view, bool saves);
template <typename B>
Tensor record(const char *name, Inputs inputs, Tensor out, B &&backward,
              ViewReplay view = nullptr, std::optional<bool> saves = std::nullopt) {
  const bool holds = saves ? *saves : take_saved_count() > 0;
  const bool node = records_node(inputs, out);
  return record_node(name, inputs, std::move(out), node ? BackwardFn(std::forward<B>(backward)) : nullptr,
                     std::move(view), holds);
}
template <typename B>
Tensor record(const char *name, std::initializer_list<Tensor> inputs, Tensor out, B &&backward,
              ViewReplay view = nullptr, std::optional<bool> saves = std::nullopt) {
  return record(name, inputs_of(inputs), std::move(out), std::forward<B>(backward), std::move(view), saves);
}

// Runs `forward` with recording off, then record()s it. The ops `forward`
// runs make Saved values of their own: the count is taken before.
template <typename F, typename B>
Tensor apply(const char *name, Inputs inputs, F &&forward, B &&backward,
             ViewReplay view = nullptr) {
  const bool saves = take_saved_count() > 0;
  Tensor out = [&] {
    NoGradGuard guard;
    return forward();
  }();
  return record(name, inputs, std::move(out), std::forward<B>(backward), std::move(view), saves);
}
template <typename F, typename B>
Tensor apply(const char *name, std::initializer_list<Tensor> inputs, F &&forward, B &&backward,
             ViewReplay view = nullptr) {
  return apply(name, inputs_of(inputs), std::forward<F>(forward), std::forward<B>(backward), std::move(view));
}

// Makes `impl` a view of `of` (rebuilt by `replay`), sharing its storage;
// `differentiable` is false for detach().
void register_view(const std::shared_ptr<TensorImpl> &impl, const std::shared_ptr<TensorImpl> &of, ViewReplay replay,
                   bool differentiable = true);

// `r`'s value as a tensor of its own (not a view of an intermediate, not an
// input's handle): a copy point of it, with an identity node named `name`.
// Stored row-major, or in the dim order `order` (outermost first).
Tensor own_tensor(const Tensor &r, const char *name, const Dims *order = nullptr);

// Marks `result` as saved by the backward of the op that made it (torch saves
// the result of exp, sqrt, tanh, sigmoid, relu, pow, amax/amin, max/min, prod,
// cumprod, std, softmax, log_softmax, ...): an in-place update of the result
// before backward reaches that node then raises, as torch's does. A no-op when
// nothing was recorded. Returns `result`.
Tensor saves_result(const Tensor &result);

// Marks `inputs` as saved by the node of `result`, an op built of others
// (conv2d, nll_loss) whose torch node saves them: an in-place update of one
// before backward reaches that node raises, as torch's does, even where the
// ops it is built of read a copy. A no-op when nothing was recorded.
Tensor saves_inputs(const Tensor &result, const std::vector<Tensor> &inputs, const char *op);

// Sums a gradient down to `shape` (the inverse of broadcasting).
Tensor sum_to(const Tensor &g, const Shape &shape);

}  // namespace autograd
}  // namespace loom
