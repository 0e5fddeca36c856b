// How the C target's float32 GEMM template (renderer/c_gemm.h) computes one
// canonical GEMM (schedule/gemm_shape.h; Target::packed_gemm), in the loop
// nest of the BLAS libraries:
//   for each (batch, panel of `columns` columns of C)   the threads' items, each
//     for each block of `depth` terms of k            with its tiles of rows:
//       pack the block's rows of B in the panel: [columns / NR][depth][NR],
//       zero past n, so one tile reads its NR columns consecutively
//       for each tile of `rows` rows of C
//         for each NR = lanes * vectors columns of the panel
//           rows x vectors accumulators in vector registers, one term of k
//           per step: a broadcast of A's element times NR values of B
// (a column-major A is first copied to [tile][term][rows], a few tiles at a
// time). The panels are equal, in whole tiles, each at most a quarter of
// the core's L2 (Target::l2_bytes).
// Each element sums its products in k order, each folded as the lowered loop
// nest folds it (with one rounding on a target with fused multiply-add), in
// the two levels lowerer.h's sum_inner_level gives k terms: a partial sum
// per `partial` terms added into the total, which stays in C between blocks
// (a block holds whole partials). Its bits are a plain loop's over k in that
// order, whatever the vector width.
#pragma once
#include <cstdint>
#include <string>

#include "codegen/target.h"
#include "schedule/gemm_shape.h"

namespace loom::codegen {

struct GemmTiles {
  int64_t rows = 0, lanes = 0, vectors = 0;  // a register tile: rows x (lanes * vectors)
  int64_t depth = 0, columns = 0;            // a packed panel of B: depth x columns
  int64_t partial = 0;                       // terms per partial sum; 0: one level
  bool fma = false;
  int64_t tile_columns() const { return lanes * vectors; }
  int64_t row_tiles(int64_t m) const { return (m + rows - 1) / rows; }
  int64_t panels(int64_t n) const { return (n + columns - 1) / columns; }
};

GemmTiles gemm_tiles(const schedule::GemmShape &g, const Target &t);

// The template's items (its global range): batch x panels x row tiles.
int64_t gemm_items(const schedule::GemmShape &g, const GemmTiles &tiles);

// The plan in words, for LOOM_DEBUG=4 and the viewer.
std::string gemm_tiles_str(const GemmTiles &tiles);

}  // namespace loom::codegen
