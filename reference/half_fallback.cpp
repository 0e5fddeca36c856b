// Torch 1.13 lacks many float16/bfloat16 CPU kernels. Computing in float32 and
// rounding the result once is the exact answer loom aims for. An op torch
// accepts with a half input beside a wider float one computes in the wider
// type: it runs again on the half input cast up, which gives the same value,
// and its backward then needs no half kernel either (pow's gradient takes the
// log of its half base, a kernel torch 1.13 lacks).
//
// The float32 node saves float32 copies, which an in-place change of the half
// input or result never reaches. Torch's node for the op with a half kernel
// would save (and version-check) the tensors themselves, so the result's hook
// checks the versions of those the float32 node is found to save.
#include <ATen/CPUGeneratorImpl.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/variable.h>

#include "torch_ops.h"

namespace loom::reference {
namespace {

bool is_half(const at::Tensor &t) { return t.scalar_type() == at::kHalf || t.scalar_type() == at::kBFloat16; }

// Whether the node f builds reads input `target` (the result where -1) in its
// backward: found on copies of `up` (each requiring grad as `in`'s does),
// whose backward raises once that tensor's version moves.
bool saves(const TorchOp &f, const TorchArgs &in, const TorchArgs &up, const Attrs &a, int target) {
  TorchArgs xs;
  std::vector<at::Tensor> leaves;
  for (size_t i = 0; i < up.size(); ++i) {
    at::Tensor c = up[i].detach().clone();
    if (in[i].requires_grad()) leaves.push_back(c.requires_grad_(true));
    xs.push_back(c);
  }
  const at::Tensor r = f(xs, a);
  if (!r.requires_grad()) return false;
  torch::autograd::impl::bump_version(target < 0 ? r : xs[static_cast<size_t>(target)]);
  try {
    (void)torch::autograd::grad({r.sum()}, leaves, {}, false, false, /*allow_unused=*/true);
  } catch (const c10::Error &e) {
    return std::string(e.what()).find("modified by an inplace operation") != std::string::npos;
  }
  return false;
}

struct Watched {
  c10::VariableVersion counter;
  uint32_t version;
  std::string what;
};

// `r` (computed from `up`, the float32 copies of `in`), whose gradient first
// checks the versions of the tensors torch's own node would have saved.
at::Tensor version_checked(const TorchOp &f, const TorchArgs &in, const TorchArgs &up, const Attrs &a, at::Tensor r) {
  if (!r.requires_grad()) return r;
  // The probes draw no numbers from the program's stream (dropout).
  at::Generator gen = at::detail::getDefaultCPUGenerator();
  const at::Tensor rng_state = gen.get_state();
  std::vector<Watched> watched;
  for (size_t i = 0; i < in.size(); ++i)
    if (in[i].defined() && up[i].defined() && saves(f, in, up, a, static_cast<int>(i)))
      watched.push_back({torch::autograd::impl::version_counter(in[i]), in[i]._version(), "input " + std::to_string(i)});
  if (saves(f, in, up, a, -1))
    watched.push_back({torch::autograd::impl::version_counter(r), r._version(), "output 0"});
  gen.set_state(rng_state);
  if (watched.empty()) return r;
  r.register_hook([watched](const at::Tensor &g) {
    for (const Watched &w : watched)
      if (w.counter.current_version() != w.version)
        throw std::runtime_error("one of the variables needed for gradient computation has been modified by an "
                                 "inplace operation: the " + w.what + " of the op computed in float32, at version " +
                                 std::to_string(w.counter.current_version()) + "; expected version " +
                                 std::to_string(w.version) + " instead.");
    return g;
  });
  return r;
}

}  // namespace

at::Tensor run_with_half_fallback(const TorchOp &f, const TorchArgs &in, const Attrs &a, bool cast_up_mixed) {
  std::optional<at::Tensor> direct;
  try {
    direct = f(in, a);
  } catch (const c10::Error &e) {
    if (!missing_half_kernel(e.what_without_backtrace())) throw;
  }
  std::optional<at::ScalarType> half;
  bool wider_float = false;
  TorchArgs up;
  for (const at::Tensor &t : in) {
    if (is_half(t)) {
      half = half && *half != t.scalar_type() ? at::kFloat : t.scalar_type();
      up.push_back(t.to(at::kFloat));
    } else {
      wider_float |= t.scalar_type() == at::kFloat || t.scalar_type() == at::kDouble;
      up.push_back(t);
    }
  }
  if (direct && !(half && wider_float && cast_up_mixed)) return *direct;
  at::Tensor r = f(up, a);
  if (direct) r = r.to(direct->scalar_type());  // a 0-d float beside a half tensor leaves the result half
  else if (half && !wider_float && r.scalar_type() == at::kFloat) r = r.to(*half);
  return version_checked(f, in, up, a, r);
}

}  // namespace loom::reference
