// Lowering: a kernel AST (views over buffers, ALU, REDUCE_AXIS) becomes a
// kernel graph over loop variables: RANGE, LOAD, ALU, REDUCE, STORE.
#pragma once
#include "uop/uop.h"

namespace loom::codegen {

using uop::UOpRef;

struct LoweredKernel {
  UOpRef sink;                   // SINK(STORE(DEFINE_GLOBAL 0, index, value))
  std::vector<UOpRef> out_ranges;  // loop variables of the output, outermost first
  bool serial = false;             // stores may collide: never split across threads
};

LoweredKernel lower(const UOpRef &ast);

}  // namespace loom::codegen
