// The vectorize pass: the elements of an upcast group become vector UOps, so
// the C target computes them in explicit vector types. The C compiler's own
// vectorizers are off (runtime/cpu/device.cpp): its block vectorizer did not
// pack across an inlined exp, nor accumulators, nor strided loads, and it
// miscompiled float -> double -> float roundings.
//
// The lanes are consecutive elements of the innermost upcast axis: 16, 8 or
// 4 float32 lanes, the widest that divides its amount (64: four vectors of
// 16). Walking the lanes' value trees in step, a tuple of nodes
// that are the same node stays one scalar (broadcast where a vector reads it);
// nodes of the same op become one vector node where the target computes that
// op on vectors (float32 arithmetic, max, min, exp, erf, log, tanh, selects and float
// comparisons, and float32 sum/max/min reductions), each lane computing
// exactly what its scalar copy computed; loads whose indices are consecutive
// and whose gate is shared become one vector load; those two elements apart
// (stride-2 pools and windows) two vector loads spanning them and a VECTORIZE
// of their even and odd lanes (the C target's one shuffle); other loads are
// gathered (VECTORIZE of the scalar loads). An op the target does not vectorize runs
// per lane on GEP's of its vector operands. Stores of consecutive indices with
// one gate store the vector; others store each lane.
//
// Kernels left alone: no upcast, an amount none of those divides,
// accumulating or indexed writes (serial), scans, and kernels whose vectors
// would only gather and add (no consecutive load, no transcendental: a row sum's
// rows run as independent scalar chains). A tail (lowerer.h) stays scalar.
//
// A kernel whose sums split into lanes (lowerer.h's sum_lanes) packs each
// sum's partials instead of the upcast group: the partials' terms are
// consecutive elements, so each partial is one lane of a vector accumulator
// fed by vector loads, and the partials then add in lane order as scalars.
//
// Memory vectors (target.h, a GPU's): 4 lanes, only loads and stores. A load
// or store of 4 consecutive float32, float16 or bfloat16 elements whose first
// index is provably a multiple of 4 (every term and the constant of its
// affine form are) is one aligned 16- or 8-byte access; the lanes of a stored value are gathered (VECTORIZE) when
// they were computed apart. Everything else runs per lane.
#pragma once
#include "codegen/lowerer.h"
#include "codegen/target.h"

namespace loom::codegen {

// How many lanes a kernel-level UOp computes (1 for a scalar).
int64_t lanes(const uop::UOp &u);

// Vectors of at most `max_lanes` float32 lanes (Target::vector_bytes / 4);
// an upcast longer than that runs as several.
LoweredKernel vectorize(const LoweredKernel &k, const Upcast &up, Vectors mode = Vectors::All, int64_t max_lanes = 16);

}  // namespace loom::codegen
