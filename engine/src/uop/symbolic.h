// Symbolic simplification of index arithmetic (int64/bool ALU over Range
// and Const), driven by value bounds.
#pragma once
#include <utility>

#include "uop/pattern.h"

namespace loom::uop {

// Bounds [vmin, vmax] of an integer expression (conservative).
std::pair<int64_t, int64_t> bounds(const UOpRef &u);

// Constant folding and algebraic identities for int/bool expressions.
const PatternMatcher &symbolic();

inline UOpRef simplify(const UOpRef &u) { return graph_rewrite(u, symbolic()); }

}  // namespace loom::uop
