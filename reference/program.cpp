// The libtorch side of the program fuzzer (program.h): every step runs on
// at::Tensors that persist for the whole program, so views alias their base
// and a write through one is seen by all of them, exactly as in torch.
#include "program.h"

#include <torch/csrc/autograd/variable.h>

#include "torch_ops.h"

namespace loom::reference {
namespace {

at::Tensor write(const ProgramStep &s, std::vector<at::Tensor> &v) {
  at::Tensor &target = v.at(static_cast<size_t>(s.args.at(0)));
  const at::Tensor &other = v.at(static_cast<size_t>(s.args.at(1)));
  if (s.op == "copy_") return target.copy_(other);
  if (s.op == "add_") return target.add_(other);
  if (s.op == "masked_fill_") return target.masked_fill_(other, to_torch_scalar(s.attrs.get_scalar("value")));
  throw std::invalid_argument("run_program: unknown write '" + s.op + "'");
}

at::Tensor run_step(const ProgramStep &s, std::vector<at::Tensor> &v, bool cast_up_mixed_half) {
  switch (s.kind) {
    case ProgramStep::Kind::Leaf: {
      at::Tensor t = to_torch(s.value).detach().clone();
      return s.requires_grad ? t.requires_grad_(true) : t;
    }
    case ProgramStep::Kind::Op: {
      TorchArgs in;
      for (int a : s.args) in.push_back(v.at(static_cast<size_t>(a)));
      return run_torch(s.op, in, s.attrs, cast_up_mixed_half);
    }
    case ProgramStep::Kind::Write: write(s, v); return {};
    case ProgramStep::Kind::Backward: {
      const at::Tensor &out = v.at(static_cast<size_t>(s.args.at(0)));
      const at::Tensor w = to_torch(loss_weight(out.sizes().vec(), from_torch_dtype(out.scalar_type()), s.weight_seed));
      out.mul(w).sum().backward();
      return {};
    }
  }
  return {};
}

ProgramResult run(const std::vector<ProgramStep> &steps, bool cast_up_mixed_half) {
  ProgramResult r;
  std::vector<at::Tensor> v;
  for (size_t i = 0; i < steps.size(); ++i) {
    try {
      v.push_back(torch_call(steps[i].op.empty() ? "leaf" : steps[i].op,
                             [&] { return run_step(steps[i], v, cast_up_mixed_half); }));
    } catch (const std::exception &e) {
      r.error_step = static_cast<int>(i);
      r.error = first_line(e.what());
      return r;
    }
  }
  for (size_t i = 0; i < steps.size(); ++i) {
    const bool defines = steps[i].kind == ProgramStep::Kind::Leaf || steps[i].kind == ProgramStep::Kind::Op;
    r.values.push_back(defines ? std::optional<HostTensor>(from_torch(v[i].detach())) : std::nullopt);
    r.strides.push_back(defines ? v[i].strides().vec() : std::vector<int64_t>{});
    const bool has_grad = steps[i].kind == ProgramStep::Kind::Leaf && v[i].grad().defined();
    r.grads.push_back(has_grad ? std::optional<HostTensor>(from_torch(v[i].grad())) : std::nullopt);
  }
  return r;
}

}  // namespace

// Ops mixing a float16/bfloat16 input with a wider float one run as torch
// runs them, so their nodes save (and version-check) the inputs themselves.
// Where torch 1.13 then lacks a half kernel (pow's backward takes the log of
// a half base), the program runs again with the half input cast up: the same
// values, with no half kernel needed.
ProgramResult run_program(const std::vector<ProgramStep> &steps) {
  ProgramResult r = run(steps, false);
  return r.error_step >= 0 && missing_half_kernel(r.error) ? run(steps, true) : r;
}

}  // namespace loom::reference
