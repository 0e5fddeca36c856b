// The CUDA target's canonical float16/bfloat16 GEMM (schedule/gemm_shape.h)
// on tensor cores: blocks of 256 threads, each a 128 x 128 tile of C, the
// operands' tiles staged through shared memory 32 terms at a time.
#pragma once
#include <cstdint>
#include <string>

#include "codegen/pipeline.h"
#include "schedule/gemm_shape.h"

namespace loom::renderer {

constexpr int64_t kCudaGemmRows = 128, kCudaGemmCols = 128, kCudaGemmThreads = 256;

std::string render_cuda_gemm(const codegen::KernelSpec &p, const schedule::GemmShape &g);

// Its launch: a block per tile of C and batch.
int64_t cuda_gemm_blocks(const schedule::GemmShape &g);

}  // namespace loom::renderer
