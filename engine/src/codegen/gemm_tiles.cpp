#include "codegen/gemm_tiles.h"

#include <algorithm>

#include "codegen/lowerer.h"
#include "shape/view.h"

namespace loom::codegen {

namespace {

// A panel of B of about 128 KiB (L2 holds it beside the tiles' rows of A);
// a tile's rows of A and columns of B stay in L1 over a block.
constexpr int64_t kDepth = 256, kColumns = 128;

}  // namespace

GemmTiles gemm_tiles(const schedule::GemmShape &g, const Target &t) {
  GemmTiles p;
  p.lanes = std::max<int64_t>(1, t.vector_bytes / 4);
  // Accumulators, a row's B vectors and a broadcast within the vector
  // registers: 32 with AVX-512 (8 x 2 + 2 + 1), 16 below it (6 x 2 + 2 + 1).
  p.rows = p.lanes >= 16 ? 8 : 6;
  p.vectors = g.n <= p.lanes ? 1 : 2;
  p.fma = t.fma;
  p.partial = sum_inner_level({g.k})[0];
  if (p.partial == 1) p.partial = 0;
  p.depth = p.partial ? p.partial * std::max<int64_t>(1, kDepth / p.partial) : std::min(kDepth, std::max<int64_t>(1, g.k));
  const int64_t nr = p.tile_columns();
  p.columns = std::min((kColumns + nr - 1) / nr, (g.n + nr - 1) / nr) * nr;
  return p;
}

int64_t gemm_items(const schedule::GemmShape &g, const GemmTiles &tiles) {
  return shape::prod(g.batch) * tiles.panels(g.n) * tiles.row_tiles(g.m);
}

std::string gemm_tiles_str(const GemmTiles &t) {
  auto s = [](int64_t v) { return std::to_string(v); };
  return "tiles " + s(t.rows) + " x " + s(t.tile_columns()) + " (" + s(t.vectors) + " x " + s(t.lanes) +
         " lanes), panels of B " + s(t.depth) + " x " + s(t.columns) + ", " +
         (t.partial ? "partial sums of " + s(t.partial) + " terms" : std::string("one level")) +
         (t.fma ? ", fused multiply-add\n" : "\n");
}

}  // namespace loom::codegen
