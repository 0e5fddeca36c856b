// The C target's float32 GEMM template (codegen/gemm_tiles.h says how it
// tiles and why its values are a plain loop's), and the batch addressing the
// targets' GEMM templates share.
#pragma once
#include <cstdint>
#include <string>

#include "codegen/linearize.h"
#include "schedule/gemm_shape.h"

namespace loom::renderer {

// A library kernel whose `tiles` are set (Target::packed_gemm).
std::string render_c_gemm(const codegen::KernelSpec &p);

// A 64-bit integer literal in C ("12LL").
std::string c_int64(int64_t v);

// The element offset of operand `o` for the flat batch index in the C
// variable `index`: its offset plus each batch axis's index times its stride.
std::string batch_offset(const schedule::GemmShape &g, const schedule::GemmOperand &o, const std::string &index);

}  // namespace loom::renderer
