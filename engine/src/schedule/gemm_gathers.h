// The GEMM split's rules for gathered operands (set_gemm_gathers, gemm.h)
// and the view merge both the split and the canonical form's recognition
// (gemm_shape.cpp) apply.
#pragma once
#include <cstdint>
#include <optional>

#include "shape/view.h"

namespace loom::schedule {

// Whether a GEMM of m rows, `batched` or not, reads a B of halves (`half`)
// or of float32 through its views (GemmOperand::view). `a_gathered`: its A
// is read so too (gathers_a), which the `batched` rule takes as a batch.
bool gathers(int64_t m, bool half, bool batched, bool a_gathered = false);

// Whether a GEMM, `batched` or not, reads an A of halves that is a view of a
// buffer but not a strided matrix through its views.
bool gathers_a(bool half, bool batched);

// `outer` (unmasked, offset 0) over the row-major index space of `inner`
// (unmasked) as one view, when each of outer's strided axes walks one of
// inner's axes (no carry into another: at most its size, one outer axis
// each): a broadcast, permute or reshape of a strided view.
std::optional<shape::View> merged_view(const shape::View &outer, const shape::View &inner);

}  // namespace loom::schedule
