// The CUDA target's library kernels (codegen::KernelSpec::library), rendered
// from templates: a stable sort per line (a thread per short line, a block
// per long one), and a canonical float16/bfloat16
// GEMM (schedule/gemm_shape.h) on tensor cores (renderer/cuda_gemm.h).
#pragma once
#include "renderer/cuda_renderer.h"

namespace loom::renderer {

CudaKernel render_cuda_library(const codegen::KernelSpec &p);

}  // namespace loom::renderer
