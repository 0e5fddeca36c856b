// The flat row-major positions of a mask's ones: the index that
// masked_select and indexing by a bool mask gather with. Their number sets
// the result's shape, so the mask is realized and the count read on the host.
#pragma once
#include "loom/tensor.h"

namespace loom::tensor {

// Where the device's memory is the host's, a loop over the mask's bytes
// (which also checks a uint8 mask holds 0 and 1 only, naming `op`); else, for
// a bool mask, mask_positions_searched() on the device, so that only the
// count crosses.
Tensor mask_positions(const Tensor &mask, const char *op);

// The device's way, int64: inclusive counts of ones (rows of about sqrt(n)
// scanned, then the rows' totals), then for each output j a binary search
// for the first position whose count reaches j + 1. Exposed for its test.
Tensor mask_positions_searched(const Tensor &mask);

}  // namespace loom::tensor
