// An int64 index expression as sum(coefficient * term) + constant: which
// lanes' indices are consecutive (the vectorize pass), how far an index moves
// per step of a loop variable (the optimize pass's unit-stride loads).
#pragma once
#include <map>
#include <vector>

#include "uop/uop.h"

namespace loom::codegen {

struct Affine {
  std::map<const uop::UOp *, int64_t> terms;  // no zero coefficients
  int64_t constant = 0;
};

// Adds, subtractions and products by constants are taken apart; any other
// node is a term.
Affine affine(const uop::UOpRef &u);

// The s for which index i of `idx` is index 0 plus s * i, for every i; 0 when
// there is none (or `idx` holds one index).
int64_t lane_stride(const std::vector<uop::UOpRef> &idx);

// Index i of `idx` is index 0 plus i, for every i.
bool consecutive(const std::vector<uop::UOpRef> &idx);

// The index is a multiple of w wherever its terms are integers.
bool aligned(const uop::UOpRef &idx, int64_t w);

}  // namespace loom::codegen
