// The C renderer: a linearized KernelSpec becomes one C function
//   void <name>(void **bufs, int64_t start, int64_t end)
// where [start, end) is the slice of the outermost loop this call runs.
#pragma once
#include <string>
#include <vector>

#include "codegen/linearize.h"

namespace loom::renderer {

std::string render_c(const codegen::KernelSpec &p);
// Shared helpers (half conversions, NaN-propagating max/min, integer pow).
const std::string &c_prelude();

// The C compiler flags the source needs (GCC or Clang, gnu11).
// No auto-vectorization: kernels vectorize only where the vectorize pass
// says (codegen/vectorize.h: explicit vector types, as wide as the -march's
// vector registers, LOOM_MARCH or native: the CPU device's Target, and
// -mprefer-vector-width=512 where that has AVX-512), because GCC 12.2's
// vectorizers miscompile kernels here:
//  - -fno-tree-loop-vectorize: the loop vectorizer, a reduction over a loop
//    nest whose index runs backwards (a flipped view summed: every element
//    read once, the sum comes out wrong; correct at -O1, at -O3, and with
//    this flag);
//  - -fno-tree-slp-vectorize: the block vectorizer, an unrolled group of
//    float -> double -> float roundings (an SGD step on float32 parameters
//    with double scalars: about 8% of the elements 1 ulp off, correct at -O0
//    and with this flag; KernelOpt.FloatDoubleRoundingsInAGroupAreTheHostsBits),
//    which drifted a training run from torch's.
// Floats as written (no contraction into FMAs), wrapping integer overflow, no
// errno from math functions.
std::vector<std::string> c_flags();

// Whether this machine runs code compiled for -march=`march`, where that can
// be told: the x86-64 levels (x86-64-v2, -v3, -v4) by their CPU features;
// any other -march (native included) is taken to run.
bool machine_runs(const std::string &march);

}  // namespace loom::renderer
