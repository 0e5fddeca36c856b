// The libtorch oracle: evaluates an op-table entry on host tensors with exact
// shape/strides/offset and returns torch's answer. Torch-free on purpose: only
// reference/*.cpp include torch headers (each such unit costs ~15 s to build).
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "loom/dtype.h"
#include "loom/host.h"

namespace loom::reference {

using AttrValue = std::variant<bool, int64_t, double, std::string, std::vector<int64_t>, DType, Scalar>;

// Named op attributes. Typed setters instead of one `set` because a literal
// like `1` would convert ambiguously to bool / int64 / double / Scalar.
// Conventions (shared with conformance/op_table):
//   dims (ints; absent or empty = all), keepdim (bool), dim (int), dtype (DType),
//   scalar (Scalar: selects the tensor-scalar overload of add/sub/mul/div/pow),
//   shape, order, size, stride (ints), offset (int), pad / bounds (ints, flattened
//   (before, after) / (begin, end) pairs from dim 0), value (Scalar),
//   start / stop / step (int for slice; Scalar for arange), end (Scalar),
//   dim0 / dim1 (int), approximate (string).
//   Indexing/shaping/order/statistics (ops_index.cpp): piece (int: which output of
//   split/chunk/unbind), size / chunks / k / step / num_classes / correction (int),
//   sizes / shifts (ints), start / end (int, flatten), descending / largest (bool),
//   mode (string: pad_mode), n (int: the size an index input indexes; generators only).
//   nn ops (ops_nn.cpp; (h, w) pairs as 2 ints): stride / padding / dilation / kernel /
//   output_size (ints), padding_mode ("same"/"valid"), groups (int), training (bool),
//   ceil_mode / count_include_pad (bool), divisor_override (int) (pools),
//   momentum / eps / negative_slope / alpha / beta / threshold / min_val / max_val /
//   p / label_smoothing (double), min / max (Scalar, clamp), normalized_shape (ints),
//   reduction ("none"/"mean"/"sum"), ignore_index / classes (int).
struct Attrs {
  std::map<std::string, AttrValue> values;

  Attrs &set_bool(const std::string &k, bool v) { return put(k, v); }
  Attrs &set_int(const std::string &k, int64_t v) { return put(k, v); }
  Attrs &set_double(const std::string &k, double v) { return put(k, v); }
  Attrs &set_string(const std::string &k, const std::string &v) { return put(k, v); }
  Attrs &set_ints(const std::string &k, const std::vector<int64_t> &v) { return put(k, v); }
  Attrs &set_dtype(const std::string &k, DType v) { return put(k, v); }
  Attrs &set_scalar(const std::string &k, Scalar v) { return put(k, v); }

  bool has(const std::string &k) const { return values.count(k) != 0; }
  // Getters throw std::invalid_argument naming the key when it is missing or of another type.
  bool get_bool(const std::string &k) const;
  bool get_bool(const std::string &k, bool dflt) const { return has(k) ? get_bool(k) : dflt; }
  int64_t get_int(const std::string &k) const;
  std::optional<int64_t> opt_int(const std::string &k) const;
  double get_double(const std::string &k) const;
  const std::string &get_string(const std::string &k) const;
  const std::vector<int64_t> &get_ints(const std::string &k) const;
  std::vector<int64_t> get_ints(const std::string &k, const std::vector<int64_t> &dflt) const;
  DType get_dtype(const std::string &k) const;
  std::optional<DType> opt_dtype(const std::string &k) const;
  Scalar get_scalar(const std::string &k) const;

  // "dims=[0, 1] keepdim=true scalar=2.5"; keys in sorted order.
  std::string str() const;

 private:
  Attrs &put(const std::string &k, AttrValue v) {
    values.insert_or_assign(k, std::move(v));
    return *this;
  }
};

std::string scalar_str(const Scalar &s);  // "2", "2.5", "true" (the kind shows)

// Runs `op` (a loom Tensor method name; see reference.cpp for the list) in
// libtorch. Inputs keep their exact views (negative strides are rebuilt with
// torch::flip: same values). The result is row-major with torch's dtype. When
// torch lacks a float16/bfloat16 CPU kernel, the op runs in float32 and is
// rounded back, which is what loom's "half types compute in float32" promises.
// Torch errors are rethrown as std::runtime_error with torch's first line.
HostTensor run(const std::string &op, const std::vector<HostTensor> &inputs, const Attrs &attrs = {});

// True when `op` is a name run() knows.
bool knows(const std::string &op);

// One movement op of a view chain: a run() op name (reshape permute expand pad
// shrink flip slice as_strided transpose contiguous) and its attrs.
struct ViewStep {
  std::string op;
  Attrs attrs;
  std::string str() const;  // "slice(dim=1 start=3 step=-2)"
};

// Applies the steps to `base` as torch tensors, view after view, so as_strided
// sees torch's storage of the step before it (the base storage for views, a
// fresh contiguous one after flip, pad, non-viewable reshape, negative slices).
HostTensor apply_view_chain(const HostTensor &base, const std::vector<ViewStep> &steps);

// What torch holds after the chain: the view's geometry and its storage size in
// elements. Generators use it to keep the next as_strided in bounds.
struct ViewInfo {
  Shape shape;
  std::vector<int64_t> strides;
  int64_t offset = 0;
  int64_t storage_numel = 0;
  bool base_storage = true;  // still a view of the base's storage: torch copied nowhere on the way
};
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
};
// torch.autograd.grad of sum(op(inputs) * weight) with respect to every
// floating-point input, each a leaf with the view's exact geometry (so
// as_strided addresses the storage it would in torch). Where torch lacks a
// float16/bfloat16 kernel the op runs in float32 between casts, which autograd
// differentiates too. `weight` has the output's shape.
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

GradResult run_backward(const std::string &op, const std::vector<ChainInput> &inputs, const Attrs &attrs,
                        const HostTensor &weight);

}  // namespace loom::reference
