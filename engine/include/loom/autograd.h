// Reverse-mode autograd, torch's way: ops record a node per differentiable
// Tensor-level op (movement ops included), and backward walks them in reverse
// topological order. Gradients are lazy tensors; backward() realizes the
// leaves' grads together in one schedule.
#pragma once
#include <optional>
#include <functional>
#include <vector>

#include "loom/tensor.h"

namespace loom::autograd {

bool is_grad_enabled();
void set_grad_enabled(bool enabled);

// torch.set_grad_enabled(enabled) as a scope: restores the previous mode on exit.
class GradModeGuard {
 public:
  explicit GradModeGuard(bool enabled) : prev_(is_grad_enabled()) { set_grad_enabled(enabled); }
  ~GradModeGuard() { set_grad_enabled(prev_); }
  GradModeGuard(const GradModeGuard &) = delete;
  GradModeGuard &operator=(const GradModeGuard &) = delete;

 private:
  bool prev_;
};

// torch.no_grad(): ops inside record nothing.
class NoGradGuard : public GradModeGuard {
 public:
  NoGradGuard() : GradModeGuard(false) {}
};

// torch.autograd.grad: d(sum of outputs[i] * grad_outputs[i]) / d(inputs[j]).
// grad_outputs may be empty (each output must then have one element). An input
// the outputs do not depend on raises unless allow_unused, which gives zeros
// (and, when `used` is given, false at its position: torch's Python API
// returns None there). Nothing is accumulated into .grad. Without
// retain_graph the nodes free what they saved: a second backward through
// one that saved values raises, as torch's does.
std::vector<Tensor> grad(const std::vector<Tensor> &outputs, const std::vector<Tensor> &inputs,
                         const std::vector<Tensor> &grad_outputs = {}, bool allow_unused = false,
                         std::vector<bool> *used = nullptr, bool retain_graph = false);

// torch.autograd.backward: accumulates d(sum of tensors[i] * grad_tensors[i])
// into the .grad of every leaf that requires grad (and of non-leaves that
// retain_grad()), then realizes those gradients and the tensors themselves in
// one schedule. grad_tensors may be empty (each tensor must then have one
// element). Tensor::backward is this for one tensor.
void backward(const std::vector<Tensor> &tensors, const std::vector<Tensor> &grad_tensors = {},
              bool retain_graph = false);

// Runs `fn` once, when the next backward() on this thread has accumulated and
// realized its gradients (callbacks in the order queued; one that throws
// drops the rest and the exception leaves backward). torch's
// Variable._execution_engine.queue_callback, also allowed before a backward
// starts: DistributedDataParallel's forward queues its gradient reduction.
void queue_callback(std::function<void()> fn);

}  // namespace loom::autograd
