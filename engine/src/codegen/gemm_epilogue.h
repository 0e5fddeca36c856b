// A GEMM template's epilogue (schedule::GemmShape::epilogue): the kernel's
// stored value at one element of C, as index arithmetic, loads and ALU for
// the template to spell out as it stores each element's sum
// (renderer/cuda_gemm.cpp).
#pragma once
#include "schedule/gemm_shape.h"
#include "uop/uop.h"

namespace loom::codegen {

// `value` over its leaves, for the template to name: RANGE nodes for C's
// flat batch index (under the batch's product), row (under m) and column
// (under n), each maybe unread; and `sum`, the element's sum, a LOAD of no
// buffer (slot -1) standing for the template's accumulator.
struct GemmEpilogue {
  uop::UOpRef value, sum, batch, row, col;
};

// The value `ast` (a GEMM kernel with an epilogue) stores at C's element
// (batch, row, col), the store's flat index (batch m + row) n + col.
GemmEpilogue gemm_epilogue(const uop::UOpRef &ast, const schedule::GemmShape &g);

}  // namespace loom::codegen
