// The block pass: a matmul-shaped reduction whose second operand does not fit
// in the L2 cache runs its output columns in blocks of kBlockColumns. The
// kernel's loops become [column block, the other output axes..., reduced
// axes..., column within the block], the column block outermost (split across
// the threads), so the block's panel of the second operand (k x 64 floats)
// stays in L2 while every row of the output computes against it; the plain
// order streams the whole operand once per row tile. Only the loop order
// changes: each element reduces in the same order, the values are the same
// bits. It applies to a kernel storing one ADD reduction of float32 (or a
// contiguous view of it) over views, ALU and casts, whose innermost input
// axis is an output axis of at least 2 * kBlockColumns (a multiple of it)
// that some view does not read (the first operand's reuse), reducing at
// least kBlockMinReduce elements per output. Skipped under LOOM_NOOPT=1,
// like the merge pass before it.
#pragma once
#include "uop/uop.h"

namespace loom::codegen {

inline constexpr int64_t kBlockColumns = 64;
inline constexpr int64_t kBlockMinReduce = 256;
// Bytes of the second operand (reduced length x columns, float32) above
// which the columns are blocked: larger than a core's L2.
inline constexpr int64_t kBlockMinPanel = int64_t{1} << 21;

uop::UOpRef block_columns(const uop::UOpRef &ast);

}  // namespace loom::codegen
