// The C GEMM template's gathered B (codegen/gemm_gather.h) spelled in C.
#pragma once
#include <string>

#include "codegen/gemm_gather.h"

namespace loom::renderer {

// An index expression over the gather's leaves: k, n (per element), F, K<i>,
// N<j> (per run) and the batch coordinates of item group bz. `narrow`: k
// and n lie in [0, 2^31), and their quotients and remainders by constants
// are taken in 32 bits (a GPU's 64-bit division by a constant is several
// 32-bit multiplies).
// `row` and `col` name the element's coordinates (B's k and n; A's are
// its row and k).
std::string gather_c(const uop::UOpRef &u, const schedule::GemmShape &g, bool narrow = false, const char *row = "k",
                     const char *col = "n");

// The statements that fill, run by run, zero where invalid, B's row k
// (columns [jc, jc + nc) into bg[0, nc)) or, along rows, its column n =
// jc + x (rows [pc, pc + kc) into bg[x kc, (x + 1) kc)).
std::string runs_c(const codegen::GatherRuns &r, const schedule::GemmShape &g);

}  // namespace loom::renderer
