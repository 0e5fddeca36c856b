// The CUDA target run on the CPU (LOOM_DEVICE=CUDA_EMULATOR): the CUDA
// renderer's kernels, prelude included, compiled as C++ by the system
// compiler against a header that supplies CUDA's built-ins (thread and block
// indices, __syncthreads, __shfl_xor_sync, __shared__) and launched block by
// block, each block's threads in order or, where the kernel synchronizes
// them (a grouped reduction), as fibers that meet at each barrier.
// Memory is host memory the engine may not read in place, so every copy goes
// through the device. It checks what the CUDA renderer computes where no GPU
// is: the engine tests and the conformance suite run on it unchanged. It
// says nothing about speed, NVRTC or the driver (replay.CudaKernelsCompile
// compiles every kernel with NVRTC). Its extern GEMM and convolution are the
// CUDA device's (runtime/cuda/cublas.h, cudnn.h) calling an emulated cuBLAS
// and cuDNN.
#pragma once
#include "runtime/cuda/cublas.h"
#include "runtime/cuda/cudnn.h"
#include "runtime/device.h"

namespace loom::runtime::cuda {

Device &emulator();
// cublasGemmStridedBatchedEx and the calls around it, computed on the CPU
// as cuBLAS documents them (runtime/cuda/cublas_emulated.cpp).
const CublasApi &emulated_cublas();
// cudnnConvolutionForward and its descriptors, likewise (cudnn_emulated.cpp).
const CudnnApi &emulated_cudnn();

}  // namespace loom::runtime::cuda
