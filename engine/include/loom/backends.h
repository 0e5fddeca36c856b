// Switches for how kernels run, in the manner of torch.backends.
#pragma once

namespace loom::backends {

// Whether canonical GEMM kernels (a matmul, a convolution's GEMM after its
// windows are packed) run on the device's extern GEMM library (OpenBLAS's
// sgemm on the CPU) where it takes their operands, rather than as generated
// code. Default on; LOOM_EXTERN=0 starts with it off. Setting it unloads the
// loaded kernels. Returns the previous setting.
bool set_extern_gemm(bool on);
bool extern_gemm();

}  // namespace loom::backends
