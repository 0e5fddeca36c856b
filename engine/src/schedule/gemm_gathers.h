// The GEMM split's rules for gathered operands (set_gemm_gathers, gemm.h),
// the view merge and the epilogue's form, which both the split and the
// canonical form's recognition (gemm_shape.cpp) apply.
#pragma once
#include <cstdint>
#include <optional>

#include "shape/view.h"
#include "uop/uop.h"

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

// Whether `value` (a kernel's stored value) is an elementwise function of
// the sum `r` (its only reduction) read in place: every path from it to r
// passes ALU ops, casts and reshapes (contiguous views) only, and all else
// it reads is constants, runtime scalars and views of buffers other than
// the output's. A GEMM template computes such a value from each output's
// sum as it stores it (GemmShape::epilogue).
bool reads_sum_in_place(const uop::UOpRef &value, const uop::UOpRef &r);

}  // namespace loom::schedule
