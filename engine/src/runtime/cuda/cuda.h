// The CUDA device: kernels are CUDA C functions
//   extern "C" __global__ void <name>(T0 *data0, const T1 *data1, ...)
// (renderer/cuda_renderer.h) compiled by NVRTC into one cubin each, loaded
// with the driver API and launched on the legacy default stream, so launches
// and copies run in the order they were issued. Both libraries are loaded
// with dlopen: without a driver, a GPU or NVRTC, device() throws a loom::Error
// that says which is missing, and the rest of loom runs on the CPU.
#pragma once
#include "runtime/device.h"

namespace loom::runtime::cuda {

// The device on GPU 0; throws loom::Error naming what is missing when CUDA
// cannot be used here.
Device &device();
// Why device() would throw (no driver, no GPU, no NVRTC), a sentence starting
// "CUDA: "; "" when CUDA can be used.
std::string missing();
// Waits for all launched work (cuCtxSynchronize), for callers that time
// kernels; a kernel's asynchronous failure is thrown here.
void synchronize();

}  // namespace loom::runtime::cuda
