// The libtorch oracle: evaluates an op-table entry on host tensors with exact
// shape/strides/offset and returns torch's answer. Torch-free on purpose: only
// reference/*.cpp include torch headers (each such unit costs ~15 s to build).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "attrs.h"

namespace loom::reference {

// Runs `op` (a loom Tensor method name; see reference.cpp for the list) in
// libtorch. Inputs keep their exact views (negative strides are rebuilt with
// torch::flip: same values). The result is row-major with torch's dtype. When
// torch lacks a float16/bfloat16 CPU kernel, the op runs in float32 and is
// rounded back, which is what loom's "half types compute in float32" promises.
// Torch errors are rethrown as std::runtime_error with torch's first line.
// `strides`, when given, gets the strides of torch's result (before it is made row-major).
HostTensor run(const std::string &op, const std::vector<HostTensor> &inputs, const Attrs &attrs = {},
               std::vector<int64_t> *strides = nullptr);

// True when `op` is a name run() knows.
bool knows(const std::string &op);

// Applies the steps to `base` as torch tensors, view after view, so as_strided
// sees torch's storage of the step before it (the base storage for views, a
// fresh one after flip, pad, non-viewable reshape, negative slices).
HostTensor apply_view_chain(const HostTensor &base, const std::vector<ViewStep> &steps);

// torch's geometry after the chain (attrs.h). conformance/torch_views.h computes
// the same without torch for the generators; this is what it is tested against.
ViewInfo view_chain_info(const HostTensor &base, const std::vector<ViewStep> &steps);

// One input of a gradient case: a base storage and the movement steps that
// build the view the op reads (as in apply_view_chain).
struct ChainInput {
  HostTensor base;
  std::vector<ViewStep> steps;
};
struct GradResult {
  HostTensor out;  // float32 where the half retry ran
  std::vector<std::optional<HostTensor>> grads;  // per input; nullopt: not floating, or no path to it
  // per input: the strides of torch's .grad; nullopt where there is none, or
  // the half retry ran (its leaves are float32 copies)
  std::vector<std::optional<std::vector<int64_t>>> grad_strides;
};
// The training check's libtorch side: a small conv net
//   conv2d(3x3, padding 1, bias) -> batch_norm (training, affine) -> gelu ->
//   max_pool2d(2) -> flatten -> linear -> cross_entropy(label_smoothing)
// trained with SGD and momentum (torch.optim.SGD's update, written out), one
// batch per step. Returns the loss of every step, computed before its update.
struct ConvNetSpec {
  HostTensor conv_w, conv_b, bn_w, bn_b, fc_w, fc_b;  // initial parameters (float32)
  std::vector<HostTensor> inputs;                     // per step: (N, C, H, W) float32
  std::vector<HostTensor> labels;                     // per step: (N,) int64
  double lr = 0.05, momentum = 0.9, label_smoothing = 0.1;
};
std::vector<double> train_convnet(const ConvNetSpec &spec);

// The in-place check's libtorch side: y = 2 * x (x.detach() instead of x when
// !base_requires_grad), v = y viewed through `steps`, v.copy_(3 * w), then
// the gradients of sum(y * cy) + sum(v * cv) with respect to the leaves x and
// w (zeros where no path leads). Torch errors come back as std::runtime_error.
struct InPlaceCase {
  HostTensor x, w, cy, cv;  // w and cv have the view's shape, cy the base's
  std::vector<ViewStep> steps;
  bool base_requires_grad = true;
};
struct InPlaceResult {
  HostTensor y, v, grad_x, grad_w;
};
InPlaceResult run_inplace_case(const InPlaceCase &c);

// The .grad that backward() of sum(op(inputs) * weight) leaves in every
// floating-point input, each a leaf with the view's exact geometry (so
// as_strided addresses the storage it would in torch). Where torch lacks a
// float16/bfloat16 kernel the op runs in float32 between casts, which autograd
// differentiates too. `weight` has the output's shape.
GradResult run_backward(const std::string &op, const std::vector<ChainInput> &inputs, const Attrs &attrs,
                        const HostTensor &weight);

}  // namespace loom::reference
