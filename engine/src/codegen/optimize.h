// The optimize pass: chooses how a kernel computes its outputs (which output
// axes one loop iteration computes several elements of) before lowering. The
// pipeline skips it under LOOM_NOOPT=1: every kernel is then the plain loop
// nest.
#pragma once
#include "codegen/lowerer.h"

namespace loom::codegen {

// An elementwise kernel (no reduction, scan or sort; a write without an index
// or an accumulation) runs its innermost axis in groups of consecutive
// elements filling 64 bytes, which the C compiler packs into vector loads and
// stores. A kernel with one reduction computes a tile of outputs per
// iteration, their reductions over one shared loop nest: 8 along the innermost
// output axis that 8 divides, times 8 (4 when that axis is not the innermost)
// along the axis whose loads the tile reuses most, or, when no axis has
// reused loads, 64 along the innermost axis alone if it is also the reduced
// input's innermost (consecutive loads). Each element reduces in the same
// order as in the plain loop nest. Empty: the plain loop nest.
Upcast optimize(const UOpRef &ast);

std::string upcast_str(const Upcast &up);

}  // namespace loom::codegen
