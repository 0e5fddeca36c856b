// The float32 GEMM template (renderer/c_gemm.h) at every vector width and
// both ways of folding a product, built for each x86-64 level this machine
// runs: every element of C has the bits of a plain loop over k in the order
// codegen/gemm_tiles.h promises, for tiles cut short at m and n, batches,
// broadcast and transposed operands and two-level sums; nothing past C is
// written; threads' item ranges may split a batch's tiles anywhere.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "codegen/gemm_tiles.h"
#include "codegen/lowerer.h"
#include "renderer/c_gemm.h"
#include "renderer/c_renderer.h"
#include "renderer/testing/compile_check.h"

namespace loom::renderer {
namespace {

using schedule::GemmShape;

// Row-major operands of `batch` (the first batch axis broadcast to A when
// `broadcast_a`), B stored transposed when `transposed_b` and A when
// `transposed_a`, both after a few leading elements.
GemmShape shape(std::vector<int64_t> batch, int64_t m, int64_t n, int64_t k, bool broadcast_a, bool transposed_b,
                bool transposed_a = false) {
  GemmShape g;
  g.batch = batch;
  g.m = m, g.n = n, g.k = k;
  g.a = {1, 3, {}, transposed_a ? 1 : k, transposed_a ? m : 1, nullptr};
  g.b = {2, 5, {}, transposed_b ? 1 : n, transposed_b ? k : 1, nullptr};
  int64_t sa = m * k, sb = k * n;
  for (size_t d = batch.size(); d-- > 0;) {
    g.a.batch_strides.insert(g.a.batch_strides.begin(), broadcast_a && d == 0 ? 0 : sa);
    g.b.batch_strides.insert(g.b.batch_strides.begin(), sb);
    sa *= broadcast_a && d == 0 ? 1 : batch[d];
    sb *= batch[d];
  }
  return g;
}

// Each flat batch index's element offset of `o`, by nested loops.
std::string offsets(const GemmShape &g, const schedule::GemmOperand &o) {
  std::vector<int64_t> offs{o.offset};
  for (size_t d = 0; d < g.batch.size(); d++) {
    std::vector<int64_t> next;
    for (int64_t base : offs)
      for (int64_t i = 0; i < g.batch[d]; i++) next.push_back(base + i * o.batch_strides[d]);
    offs = next;
  }
  std::string s = "{";
  for (int64_t v : offs) s += std::to_string(v) + ",";
  return s + "}";
}

int64_t extent(const GemmShape &g, const schedule::GemmOperand &o, int64_t rows, int64_t cols) {
  int64_t last = o.offset + (rows - 1) * o.row_stride + (cols - 1) * o.col_stride;
  for (size_t d = 0; d < g.batch.size(); d++) last += (g.batch[d] - 1) * o.batch_strides[d];
  return last + 1;
}

// One case's kernel and its check: C filled with a canary past its end, the
// items run as two threads' ranges, each element compared with the plain loop.
std::string check_case(const GemmShape &g, int64_t lanes, bool fma, const std::string &name) {
  codegen::Target t;
  t.vector_bytes = 4 * lanes;
  t.fma = fma;
  codegen::KernelSpec p;
  p.name = name;
  p.buf_dtypes = {DType::Float32, DType::Float32, DType::Float32};
  p.gemm = std::make_shared<GemmShape>(g);
  p.tiles = codegen::gemm_tiles(g, t);
  const int64_t items = codegen::gemm_items(g, p.tiles);
  int64_t batches = 1;
  for (int64_t b : g.batch) batches *= b;
  const int64_t partial = codegen::sum_inner_level({g.k})[0];
  auto s = [](int64_t v) { return std::to_string(v) + "LL"; };
  const std::string fold = fma ? "fmaf(x, y, acc)" : "acc + x * y";
  return render_c_gemm(p) + "static long check_" + name + "(void) {\n" +
         "  const int64_t M = " + s(g.m) + ", N = " + s(g.n) + ", K = " + s(g.k) + ", B = " + s(batches) +
         ", P = " + s(partial) + ";\n"
         "  static const int64_t aoff[] = " + offsets(g, g.a) + ", boff[] = " + offsets(g, g.b) + ";\n"
         "  float *a = malloc(4 * " + s(extent(g, g.a, g.m, g.k)) + "), *b = malloc(4 * " + s(extent(g, g.b, g.k, g.n)) + ");\n"
         "  float *c = malloc(4 * (B * M * N + 64));\n"
         "  fill(a, " + s(extent(g, g.a, g.m, g.k)) + "); fill(b, " + s(extent(g, g.b, g.k, g.n)) + ");\n"
         "  for (int64_t i = 0; i < B * M * N + 64; i++) c[i] = 12345.0f;\n"
         "  void *bufs[3] = {c, a, b};\n"
         "  " + name + "(bufs, 0, " + s(items / 3) + ");\n"
         "  " + name + "(bufs, " + s(items / 3) + ", " + s(items) + ");\n"
         "  long bad = 0;\n"
         "  for (int64_t z = 0; z < B; z++)\n"
         "    for (int64_t i = 0; i < M; i++)\n"
         "      for (int64_t j = 0; j < N; j++) {\n"
         "        float tot = 0.0f, acc = 0.0f;\n"
         "        for (int64_t kk = 0; kk < K; kk++) {\n"
         "          const float x = a[aoff[z] + i * " + s(g.a.row_stride) + " + kk * " + s(g.a.col_stride) + "];\n"
         "          const float y = b[boff[z] + kk * " + s(g.b.row_stride) + " + j * " + s(g.b.col_stride) + "];\n"
         "          acc = " + fold + ";\n"
         "          if (P > 1 && (kk + 1) % P == 0) { tot = tot + acc; acc = 0.0f; }\n"
         "        }\n"
         "        bad += !same(c[(z * M + i) * N + j], P > 1 ? tot : acc);\n"
         "      }\n"
         "  for (int64_t i = B * M * N; i < B * M * N + 64; i++) bad += c[i] != 12345.0f;\n"
         "  if (bad) printf(\"" + name + ": %ld mismatches\\n\", bad);\n"
         "  free(a); free(b); free(c);\n"
         "  return bad;\n"
         "}\n";
}

TEST(CGemm, EveryElementHasThePlainLoopsBitsAtEveryWidthAndFold) {
  const std::vector<GemmShape> cases = {
      shape({}, 16, 1024, 512, false, false),     // whole tiles, one level over two blocks of k
      shape({}, 13, 37, 2048, false, false),      // rows and columns cut short; partial sums of 64
      shape({2, 3}, 20, 70, 1030, true, true),    // A broadcast, B transposed; partial sums of 10
      shape({}, 5, 3, 7, false, true),            // one vector per row
      // A transposed (copied CT = 8 tiles at a time): more tiles than a copy
      // holds, the last cut short, a thread's range starting within a copy
      shape({2}, 133, 45, 300, false, false, true),
      shape({2}, 133, 45, 1030, true, false, true),  // and broadcast, with partial sums of 10
  };
  ASSERT_EQ(codegen::sum_inner_level({2048})[0], 64);
  ASSERT_EQ(codegen::sum_inner_level({1030})[0], 10);
  std::string program = c_prelude() + R"(
#include <math.h>
#include <stdio.h>
#include <string.h>
static int same(float p, float q) { uint32_t u, v; memcpy(&u, &p, 4); memcpy(&v, &q, 4); return u == v; }
static void fill(float *x, int64_t n) {
  uint32_t s = 12345u;
  for (int64_t i = 0; i < n; i++) { s = s * 1664525u + 1013904223u; x[i] = (float)((s >> 8) & 0xffff) / 8192.0f - 4.0f; }
}
)";
  std::string calls;
  int id = 0;
  for (int64_t lanes : {4, 8, 16})
    for (bool fma : {false, true})
      for (const GemmShape &g : cases) {
        const std::string name = "gemm_case" + std::to_string(id++);
        program += check_case(g, lanes, fma, name);
        calls += "  bad += check_" + name + "();\n";
      }
  program += "int main(void) {\n  long bad = 0;\n" + calls + "  printf(\"%ld mismatches\\n\", bad);\n  return bad != 0;\n}\n";
  for (const std::string &march : testing::marches_run_here()) {
    SCOPED_TRACE(march.empty() ? "the kernels' flags" : march);
    const testing::CheckRun r = testing::build_and_run(program, march);
    ASSERT_TRUE(r.built) << r.output.substr(0, 4000);
    EXPECT_EQ(r.status, 0) << r.output;
    EXPECT_EQ(r.output, "0 mismatches\n");
  }
}

// The plan per vector width: the register tile fills the registers, a
// block of k holds whole partial sums, a panel whole tiles.
TEST(CGemm, TheTilesFollowTheVectorWidthAndThePartialSums) {
  codegen::Target t;
  const GemmShape g = shape({}, 64, 961, 1030, false, false);
  for (auto [bytes, rows] : {std::pair<int64_t, int64_t>{64, 8}, {32, 6}, {16, 6}}) {
    t.vector_bytes = bytes;
    const codegen::GemmTiles p = codegen::gemm_tiles(g, t);
    EXPECT_EQ(p.rows, rows);
    EXPECT_EQ(p.lanes, bytes / 4);
    EXPECT_EQ(p.vectors, 2);
    EXPECT_EQ(p.partial, 10);
    EXPECT_EQ(p.depth % p.partial, 0);
    EXPECT_EQ(p.columns % p.tile_columns(), 0);
  }
  t.vector_bytes = 64;
  EXPECT_EQ(codegen::gemm_tiles(shape({}, 64, 10, 100, false, false), t).vectors, 1);  // 10 columns: one vector of 16
  EXPECT_EQ(codegen::gemm_tiles(shape({}, 64, 100, 1000, false, false), t).partial, 0);  // under 1024 terms: one level
}

// Panels of B: as wide as a quarter of L2 holds, equal in whole tiles, and
// narrower where that leaves fewer than 16 items.
TEST(CGemm, PanelsAreEqualAndSizedByTheLevel2Cache) {
  codegen::Target t;
  t.vector_bytes = 64;
  const GemmShape g = shape({}, 512, 576, 4608, false, false);  // 18 tiles of 32 columns; blocks of 256 terms
  t.l2_bytes = 2 << 20;                                         // 16 tiles of 256 terms in 512 KiB
  codegen::GemmTiles p = codegen::gemm_tiles(g, t);
  EXPECT_EQ(p.depth, 256);
  EXPECT_EQ(p.columns, 9 * 32);
  EXPECT_EQ(p.panels(g.n), 2);
  t.l2_bytes = 1 << 20;  // 8 tiles in 256 KiB: 3 panels of 6
  p = codegen::gemm_tiles(g, t);
  EXPECT_EQ(p.columns, 6 * 32);
  EXPECT_EQ(p.panels(g.n), 3);
  // One row tile: 2 panels would fit, 16 give 16 items
  const GemmShape wide = shape({}, 8, 4096, 64, false, false);
  t.l2_bytes = 2 << 20;
  p = codegen::gemm_tiles(wide, t);
  EXPECT_EQ(p.panels(wide.n), 16);
  EXPECT_EQ(codegen::gemm_items(wide, p), 16);
}

}  // namespace
}  // namespace loom::renderer
