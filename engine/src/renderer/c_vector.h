// The C target's vectors (codegen/vectorize.h): GCC/Clang vector extensions.
// w float32 lanes are a loom_v<w>f, a mask of w lanes a loom_v<w>i of int32
// (-1 true, 0 false, as the vector comparisons give). Every vector function
// of the prelude computes each lane exactly as its scalar counterpart
// (loom_vexpf<w> as loom_expf, loom_verff<w> as loom_erff, ...), so a kernel
// computes the same bits vectorized or not (c_vector_test.cpp checks it).
// LOOM_VSHUF<w>(a, b, i...) picks lanes i of a and b (b's from w on): one
// shuffle, the form of a VECTORIZE of two vectors' lanes.
#pragma once
#include <string>

#include "renderer/cstyle.h"

namespace loom::renderer {

// One statement for a vector UOp (lanes > 1) or a GEP.
std::string c_vector_statement(CStyleRenderer &r, const UOpRef &u);

// The vector types and functions for 4, 8 and 16 lanes.
std::string c_vector_prelude();

// Replaces every `key` (a $-placeholder of the C target's templates) in `text`
// by `value`.
void fill_placeholder(std::string &text, const std::string &key, const std::string &value);

}  // namespace loom::renderer
