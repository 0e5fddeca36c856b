// The C GEMM template's gathered B (codegen/gemm_gather.h) spelled in C.
#pragma once
#include <string>

#include "codegen/gemm_gather.h"

namespace loom::renderer {

// An index expression over the gather's leaves: k, n (per element), F, K<i>,
// N<j> (per run) and the batch coordinates of item group bz.
std::string gather_c(const uop::UOpRef &u, const schedule::GemmShape &g);

// The statements that fill brow[0, nc) with row k of B, columns [jc, jc +
// nc), run by run along its innermost column axis, zero where invalid.
std::string runs_c(const codegen::GatherRuns &r, const schedule::GemmShape &g);

}  // namespace loom::renderer
