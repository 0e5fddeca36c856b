// The optimize pass: chooses how a kernel computes its outputs (which output
// axes one loop iteration computes several elements of) before lowering. The
// pipeline skips it under LOOM_NOOPT=1: every kernel is then the plain loop
// nest. Both functions take the kernel after the merge pass
// (pipeline.h's optimize_input()), whose axes the upcasts name.
#pragma once
#include "codegen/lowerer.h"
#include "codegen/target.h"

namespace loom::codegen {

// An elementwise kernel (no reduction, scan or sort; a write without an index
// or an accumulation) runs its innermost axis in groups of consecutive
// elements filling 64 bytes, which the vectorize pass makes one vector
// (vectorize.h). A kernel with one reduction computes a tile of outputs per
// iteration, their reductions over one shared loop nest (optimize.cpp,
// reduce_tile): 8 x 8 when the output's innermost axis is tiled (one vector
// per row of the tile), a tile of at most 48 scalar accumulators with the
// fewest loads per accumulator otherwise (a convolution's 3x3 window whole).
// Each element reduces in the same order as in the plain loop nest. Empty:
// the plain loop nest. The target may change the group's bytes, forbid its
// tail, or the tiles (target.h).
Upcast optimize(const UOpRef &ast, const Target &t = {});

// How many lanes the kernel's float sums split into (lower's sum_lanes):
// the target's sum_lanes where the reduction's terms are consecutive in
// memory along its input's last axis and no term is read along the innermost
// axis of the upcast `up` while moving along the reduction (a matmul's
// columns, which the vectorize pass makes the vector lanes instead; a
// per-channel mean does not count); otherwise 1.
int64_t sum_lanes(const UOpRef &ast, const Upcast &up, const Target &t = {});

// What LOOM_BEAM times: up to `n` upcasts for `ast`, optimize()'s first and
// the plain loop nest second, then other groups and tiles (elementwise: the
// innermost axis in groups of 16 to 128 bytes; one reduction: 4 to 16 of an
// output axis, times 2 to 8 of another, at most 64 accumulators), fewest
// loads per accumulator first. Empty where there is nothing to choose
// (scans, sorts, indexed or accumulating writes, several reductions).
std::vector<Upcast> upcast_candidates(const UOpRef &ast, size_t n);

std::string upcast_str(const Upcast &up);

}  // namespace loom::codegen
