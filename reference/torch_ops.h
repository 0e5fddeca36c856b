// Internal to reference/: the few translation units that include ATen share
// the host <-> torch conversion and the op map through this header. Nothing
// outside reference/ may include it (it pulls in torch headers).
#pragma once
#include <ATen/ATen.h>

#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "reference.h"

namespace loom::reference {

using TorchArgs = std::vector<at::Tensor>;
using TorchOp = std::function<at::Tensor(const TorchArgs &, const Attrs &)>;
using OpMap = std::unordered_map<std::string, TorchOp>;

at::ScalarType to_torch_dtype(DType dt);
DType from_torch_dtype(at::ScalarType st);
at::Scalar to_torch_scalar(const Scalar &s);
// The host view as a torch tensor over a private copy of its storage; `raw`
// receives the storage tensor when given.
at::Tensor to_torch(const HostTensor &h, at::Tensor *raw = nullptr);
HostTensor from_torch(const at::Tensor &t);  // row-major copy
// Runs a named op, in float32 where torch has no float16/bfloat16 CPU kernel.
// A float16/bfloat16 input beside a wider float one is cast up first
// (`cast_up_mixed_half`; its backward then needs no half kernel either), or
// given to torch as it is.
at::Tensor run_torch(const std::string &op, const TorchArgs &in, const Attrs &a, bool cast_up_mixed_half = true);
// Whether a torch error is one of torch 1.13's missing float16/bfloat16 CPU kernels.
bool missing_half_kernel(const std::string &msg);
// f on `in`, or, where torch lacks the half kernel (or `cast_up_mixed` and a
// half input sits beside a wider float one), on the half inputs cast up to
// float32, with the version checks of torch's own node (half_fallback.cpp).
at::Tensor run_with_half_fallback(const TorchOp &f, const TorchArgs &in, const Attrs &a, bool cast_up_mixed);
// to_torch(base) followed by the movement steps.
at::Tensor chain(const HostTensor &base, const std::vector<ViewStep> &steps, at::Tensor *raw = nullptr);
std::string first_line(const std::string &s);

// Parts of the op map, one per area (ops_*.cpp).
void add_nn_ops(OpMap &t);
void add_index_ops(OpMap &t);

// Calls `f`, turning torch errors into std::runtime_error with torch's first line.
template <typename F>
auto torch_call(const std::string &what, F &&f) -> decltype(f()) {
  try {
    return f();
  } catch (const c10::Error &e) {
    throw std::runtime_error(what + ": " + first_line(e.what_without_backtrace()));
  }
}

}  // namespace loom::reference
