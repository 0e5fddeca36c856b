// The kernels a realize would run, without running anything (the schedule
// view tinygrad gives and torch has none of): for a newcomer to see where each
// kernel comes from, and for tests and tools to look at the generated code.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "loom/tensor.h"

namespace loom {

// One kernel of a schedule, in the order the kernels would run.
struct KernelInfo {
  std::string name;         // from its structure: "E_" elementwise, "r_" reduce, "s_" scan, "sort_", "w_" stores
  std::string ast;          // the kernel AST, one UOp per line
  std::string program;      // the linearized program for the C target
  std::string c_source;     // the C target's source
  std::string cuda_source;  // the CUDA target's source, launched as cuda_blocks x cuda_threads
  int64_t cuda_blocks = 1, cuda_threads = 1;
  // Its buffers by slot ("buf12[4096] float32"; slot 0 is the output).
  std::vector<std::string> buffers;
  // What the launch binds: runtime scalars ("v0=0.5 float32") and pointer
  // shifts ("data1+1024"); "" when none.
  std::string bound;
  // The extern kernel the device runs in its place ("openblas sgemm"), or "".
  std::string library;
};

// The kernels realize_all(tensors) would run now: those computing the tensors
// and every pending in-place update (which stay pending). Nothing is compiled
// or run; a tensor already computed needs no kernel. With LOOM_BEAM set, the
// kernels realize runs may be upcast otherwise than shown here.
std::vector<KernelInfo> kernels_of(const std::vector<Tensor> &tensors);

}  // namespace loom
