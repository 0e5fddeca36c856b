// Views -> index expressions: the flat index a ShapeTracker reads for a
// logical index, and whether that element is valid (inside every mask).
#pragma once
#include <utility>
#include <vector>

#include "uop/uop.h"

namespace loom::codegen {

using uop::UOpRef;

// idx[d] is an int64 expression per logical dim (a Range, or const 0 for size-1 dims).
std::pair<UOpRef, UOpRef> view_index(const shape::ShapeTracker &st, const std::vector<UOpRef> &idx);
// The same view read as coordinates into the row-major shape `inner` it views
// (a computed value's shape), and their validity: without division where
// each view dim steps along one inner dim (pads, slices, permutes, windows).
std::pair<std::vector<UOpRef>, UOpRef> view_coords(const shape::ShapeTracker &st, const std::vector<UOpRef> &idx,
                                                   const Shape &inner);
// Logical index into `shape` of a row-major flat index.
std::vector<UOpRef> unravel(const UOpRef &flat, const Shape &shape);
// Row-major flat index of a logical index.
UOpRef ravel(const std::vector<UOpRef> &idx, const Shape &shape);

}  // namespace loom::codegen
