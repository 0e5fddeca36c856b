#include "codegen/gemm_tiles.h"

#include <algorithm>

#include "codegen/lowerer.h"
#include "shape/view.h"

namespace loom::codegen {

namespace {

// Blocks of 256 terms of k; a panel of B takes at most a quarter of L2
// (beside the tiles' rows of A and C), at least one tile's columns; a
// tile's rows of A and columns of B stay in L1 over a block.
constexpr int64_t kDepth = 256, kPanelShareOfL2 = 4, kMinItems = 16;

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
  // Panels of equal width in whole tiles, so that the threads' equal runs of
  // items (row tiles of a panel) are equal work, and enough of them for
  // kMinItems items where the columns allow.
  const int64_t nr = p.tile_columns(), tiles = (g.n + nr - 1) / nr;
  const int64_t most = std::max<int64_t>(1, t.l2_bytes / kPanelShareOfL2 / (p.depth * 4) / nr);
  const int64_t others = shape::prod(g.batch) * p.row_tiles(g.m);
  const int64_t panels = std::min(tiles, std::max((tiles + most - 1) / most, (kMinItems + others - 1) / others));
  p.columns = (tiles + panels - 1) / panels * nr;
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
