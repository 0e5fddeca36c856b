// The merge pass: adjacent output axes of an elementwise kernel that every
// view of it reads as one axis (each load's and the store's strides walk
// both row-major, or neither: a broadcast) become one axis, so the innermost
// loop is long and the optimize pass's groups fill it. A BatchNorm-GELU over
// (64, 64, 15, 15) runs as (64, 14400). In a kernel with reductions (all over
// one input shape, none reading another) only axes every reduction reduces
// merge: a BatchNorm's statistics over (N, C, 15, 15) reduce (N, C, 225).
// A view of a computed value merges where it reads the value's coordinates
// without division, merging two adjacent axes of the value as well where
// that makes it so (a convolution's windows read back through a reshape);
// a buffer's view stack (a pool's window under a reshape) must not come to
// divide the merged axis apart.
// The outermost axis is never merged: it is the one the threads split.
// Kernels with scans, sorts, gathers or writes through a view are left as
// they are.
#pragma once
#include "uop/uop.h"

namespace loom::codegen {

uop::UOpRef merge_axes(const uop::UOpRef &ast);

}  // namespace loom::codegen
