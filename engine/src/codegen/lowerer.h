// Lowering: a kernel AST (views over buffers, ALU, REDUCE_AXIS) becomes a
// kernel graph over loop variables: RANGE, LOAD, ALU, REDUCE, STORE.
#pragma once
#include "uop/uop.h"

namespace loom::codegen {

using uop::UOpRef;

struct LoweredKernel {
  // SINK(STORE(DEFINE_GLOBAL 0, index, value), ...): one store per element of
  // an unrolled group (see below), in element order.
  UOpRef sink;
  std::vector<UOpRef> out_ranges;  // loop variables of the output, outermost first
  bool serial = false;             // stores may collide: never split across threads
};

// Elementwise kernels (no reduction or scan; a write without an index or an
// accumulation) run their innermost output axis in groups of consecutive
// elements filling 32 bytes, one store per element, which the C compiler
// packs into vector loads and stores. A kernel with one reduction computes a
// group of 8 elements of an output axis per iteration, their reductions over
// one shared loop nest. LOOM_NOOPT=1: neither.
LoweredKernel lower(const UOpRef &ast);

}  // namespace loom::codegen
