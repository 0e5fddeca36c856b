// A GPU's Write that adds into its output (scatter_add, index_add, index_put
// with accumulate). The lowerer's Write stores each element after loading
// and adding the stored one, serially, so that duplicate addresses add in
// order (lowerer.cpp: lower_write). On a target with atomic adds
// (Target::atomic_add) each such store becomes an ATOMIC_ADD and the kernel's
// output loops run across threads: duplicates add in whatever order the
// threads reach them, as torch's CUDA kernels add them.
#pragma once
#include "codegen/lowerer.h"
#include "codegen/target.h"

namespace loom::codegen {

// `k` with its stores as atomic adds where the target has them, every store
// is buf[i] = buf[i] + v (under one gate) of a dtype with an atomic add, and
// no v reads buf; else `k` unchanged.
LoweredKernel atomic_writes(LoweredKernel k, const Target &t);

}  // namespace loom::codegen
