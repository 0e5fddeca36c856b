// The CUDA target: the same linearized programs as the C target become
//   extern "C" __global__ void <name>(T0 *data0, const T1 *data1, ...)
// for NVRTC. The leading output loops become the thread index (one thread per
// output element, or per 16 bytes of an elementwise kernel's outputs, accessed
// as float4 where aligned); a reduction with few outputs runs one block of threads
// per output, folding their partial results by warp shuffles and shared
// memory (the KernelSpec's launch plan, codegen/launch.h, says which). Halves
// are 16-bit in memory and float in registers.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "codegen/linearize.h"
#include "codegen/pipeline.h"

namespace loom::renderer {

struct CudaKernel {
  std::string source;               // the kernel (cuda_prelude() + source is its translation unit)
  int64_t blocks = 1, threads = 1;  // the launch: blocks of threads
};
CudaKernel render_cuda(const codegen::KernelSpec &p);
// What every kernel needs before it: fixed-width integers, NAN and INFINITY,
// the C prelude's helpers under the same names, the block fold.
const std::string &cuda_prelude();

// A kernel's parameter list as its header declares it: a pointer per
// buffer in slot order (slot 0 written), then each runtime scalar by value.
std::string cuda_param_decls(const codegen::KernelSpec &p);

// Straight-line code computing `value` in a template of kernel `p`, spelled
// as this target's kernels spell each op (CStyleRenderer::render_values).
std::string render_cuda_values(const codegen::KernelSpec &p, const uop::UOpRef &value,
                               const std::vector<std::pair<uop::UOpRef, std::string>> &bound,
                               const std::string &indent, std::string &stored);

// The parameter declarations ("const float *__restrict__ data1", ...) of
// kernel `name` in a translation unit this target rendered: one per buffer,
// in slot order. Raises InternalError when the source has no such kernel.
std::vector<std::string> cuda_params(const std::string &source, const std::string &name);

// The codegen parameters of CUDA kernels.
codegen::Target cuda_target();

}  // namespace loom::renderer
