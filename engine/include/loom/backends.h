// Switches for how kernels run, in the manner of torch.backends.
#pragma once
#include <cstdint>
#include <functional>

namespace loom::backends {

// Whether canonical GEMM kernels (a matmul, a convolution's GEMM after its
// windows are packed) run on the device's extern GEMM library (OpenBLAS's
// sgemm on the CPU) where it takes their operands, rather than as generated
// code. Default on; LOOM_EXTERN=0 starts with it off. Setting it unloads the
// loaded kernels. Returns the previous setting.
bool set_extern_gemm(bool on);
bool extern_gemm();

// Whether a JIT replay submits its kernels as device graphs (CUDA graphs;
// the CPU has none): the launches between two host steps recorded as one
// graph on the first replay, then submitted in one call, the nodes whose
// buffers or runtime scalars changed updated in place. Default off;
// LOOM_GRAPHS=1 starts with it on. Returns the previous setting.
bool set_launch_graphs(bool on);
bool launch_graphs();

// The device every tensor of this process lives on ("cpu" or "cuda", from
// LOOM_DEVICE), and a wait for the kernels it has queued (a GPU's launches
// return before they finish; reading a tensor's values waits by itself), as
// torch.cuda.synchronize().
const char *device();
void synchronize();

// Compiles ahead the kernels a piece of code will need: runs `rehearsal` once
// only to learn them (on this thread, realize schedules and generates each
// kernel but neither compiles nor runs it; what realizes reads back as zeros;
// anything the rehearsal throws is dropped), then compiles the kernels no
// cache holds yet all at once, as the device batches them (the CPU compiles
// dozens in one compiler run, several times cheaper than one run each). Run
// the same code for real afterwards: its kernels are loaded already. A
// kernel that fails to compile here is compiled again, and reported, when the
// real run needs it. Returns the number of kernels compiled.
int64_t compile_ahead(const std::function<void()> &rehearsal);

}  // namespace loom::backends
