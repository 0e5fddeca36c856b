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

// The device every tensor of this process lives on ("cpu" or "cuda", from
// LOOM_DEVICE), and a wait for the kernels it has queued (a GPU's launches
// return before they finish; reading a tensor's values waits by itself), as
// torch.cuda.synchronize().
const char *device();
void synchronize();

}  // namespace loom::backends
