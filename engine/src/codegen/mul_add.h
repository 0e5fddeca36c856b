// The multiply-add pass, on a target with fused multiply-add (Target::fma):
// a float32 or float64 sum of products, REDUCE(ADD) over a MUL of its dtype,
// becomes REDUCE(MULADD) over the same MUL (uop/ops.def), which folds each
// product into the accumulator with one rounding: fmaf / fma, or the C
// prelude's loom_vfmaf<W> on vector lanes. BLAS and torch's CPU convolution
// kernels accumulate so. Scalar and vector code compute the same bits; each
// step may differ from the two-rounding sum in its last bit. Nothing else
// changes. Skipped under LOOM_NOOPT=1, like every optional pass.
#pragma once
#include "codegen/lowerer.h"

namespace loom::codegen {

LoweredKernel fuse_multiply_add(const LoweredKernel &k);

// The values a reduction's accumulate step reads: its value, or for a
// MULADD fold the two factors of its MUL.
std::vector<uop::UOpRef> fold_operands(const uop::UOpRef &reduce);

}  // namespace loom::codegen
