// Linearization: the kernel graph in execution order as a list of UOps (a
// RANGE opens its loop, ENDRANGE closes it, DEFINE_ACC declares a fold's
// accumulator, the REDUCE or SCAN itself accumulates, STORE stores). Every
// value is computed inside the innermost loop it depends on; loop-invariant
// work is hoisted out of reduction loops.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "codegen/gemm_tiles.h"
#include "codegen/launch.h"
#include "codegen/lowerer.h"
#include "schedule/gemm_shape.h"

namespace loom::codegen {

struct KernelSpec {
  std::string name;
  std::vector<UOpRef> uops;  // in execution order
  std::vector<DType> buf_dtypes;  // per DEFINE_GLOBAL slot
  // The DEFINE_VARs it reads, by slot: a launch passes their values after
  // the buffers, in this order (a split's part may read only some slots).
  std::vector<UOpRef> vars;
  UOpRef global_range;            // outermost output loop, split across threads (may be null)
  int64_t iterations = 1;         // innermost body executions (for GFLOP/s estimates)
  int64_t alu_ops = 0;            // ALU nodes in the kernel
  // ALU operations on values executed by one run (loop trip counts times the
  // value ALU nodes inside, each reduction's combine included; index
  // arithmetic excluded): the work counter RunStats adds up.
  int64_t work = 0;
  // A library kernel, rendered from a template, not from lines: the SORT
  // node, or the SINK of a canonical GEMM, whose shape is `gemm` (the
  // schedule item's): of halves on tensor cores (Target::tensor_cores), or of
  // float32 tiled as `tiles` says (Target::packed_gemm; rows 0 otherwise).
  UOpRef library;
  std::shared_ptr<const schedule::GemmShape> gemm;
  GemmTiles tiles;
  // A GPU target's launch plan (kernel_spec makes it; a CPU target's is empty).
  Launch launch;
};

KernelSpec linearize(const LoweredKernel &k, const std::string &name, std::vector<DType> buf_dtypes);
std::string program_str(const KernelSpec &p);  // one line per entry, for LOOM_DEBUG=4

}  // namespace loom::codegen
