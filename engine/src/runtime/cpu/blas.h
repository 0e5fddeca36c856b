// The CPU's extern GEMM: OpenBLAS's cblas_sgemm, loaded with dlopen on first
// use (Debian's libopenblas0; no link-time dependency).
#pragma once
#include <memory>

#include "runtime/device.h"

namespace loom::runtime::cpu {

// A program running the canonical GEMM `g` with one sgemm call per batch
// element; nullptr when OpenBLAS cannot be loaded or an operand is not a
// matrix sgemm takes (unit stride along its rows or its columns, the other
// stride at least the matrix's width, dimensions below 2^31).
std::shared_ptr<const Program> sgemm_program(const schedule::GemmShape &g);

// Whether libopenblas could be loaded (the reason is in `why` otherwise).
bool have_openblas(std::string *why = nullptr);

}  // namespace loom::runtime::cpu
