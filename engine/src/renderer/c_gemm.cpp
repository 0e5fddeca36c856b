#include "renderer/c_gemm.h"

#include "codegen/gemm_gather.h"
#include "loom/error.h"
#include "renderer/c_gemm_gather.h"
#include "renderer/c_vector.h"

namespace loom::renderer {

namespace {

// $-names are replaced by the kernel's constants. One item: a batch and panel
// of C (group) and a run of its row tiles [t0, t1). Rows past m read row
// m - 1 of A and are not stored; columns past n are zero in the packed panel
// and not stored. `tot` holds each element's total (single level: its running
// sum) over a block; C holds it between blocks. A column-major A is copied,
// CT tiles at a time, to [tile][term][MR] (`ap`): read in place, a tile's
// terms lie a column apart, each a page of its own once columns are long,
// and half of each line they read waits for the next tile. The panel's rows
// PF terms ahead are prefetched: L2's hardware prefetch alone leaves the
// tile's loads waiting. A gathered B (codegen/gemm_gather.h) goes into the
// panel from its views ($GATHER): a row at a time by runs (2), a column at a
// time by runs and then transposed as a column-major B is (3), or element
// by element (1).
constexpr const char *kTemplate = R"(#include <stdlib.h>
#define LOOM_GV loom_v$Wf
#define LOOM_GLOAD loom_vload$Wf
#define LOOM_GSPLAT loom_splat$Wf
#define LOOM_GSTORE(p, v) __builtin_memcpy((p), &(v), sizeof(LOOM_GV))
#define LOOM_GFOLD(x, y, acc) $FOLD
#define LOOM_GSHUF LOOM_VSHUF$W
#define LOOM_BCOL(x) $BCOL  /* column x of the panel, term pc: a column-major B, or gathered (3) */
#define LOOM_BCS $BCOLSTRIDE
void $NAME(void **bufs, int64_t start, int64_t end) {
  enum { MR = $MR, NV = $NV, W = $W, NR = $W * $NV, CT = 8, PF = 8, PACK_A = $ARS == 1 && $ACS != 1 };
  const int64_t M = $M, N = $N, K = $K, KC = $KC, NC = $NC, P = $P, TILES = $TILES, PANELS = $PANELS;
  const int64_t AK = PACK_A ? MR : $ACS;  // a tile's step from one term of k to the next
  float *restrict c_all = (float *)bufs[0];
  const float *restrict a_all = (const float *)bufs[$SA];
  const float *restrict b_all = (const float *)bufs[$SB];
  float *restrict bp = (float *)aligned_alloc(64, (sizeof(float) * KC * NC + 63) / 64 * 64);
  float *restrict ap = PACK_A ? (float *)aligned_alloc(64, (sizeof(float) * KC * MR * CT + 63) / 64 * 64) : NULL;
  // A gathered B's row (2) or its panel's columns (3) before they go to the panel
  float *restrict bg = $GATHER >= 2 ? (float *)aligned_alloc(64, (sizeof(float) * (NC + NR) * ($GATHER == 3 ? KC : 1) + 63) / 64 * 64) : NULL;
  if (!bp || (PACK_A && !ap) || ($GATHER >= 2 && !bg)) abort();
  for (int64_t item = start; item < end;) {
    const int64_t group = item / TILES, t0 = item % TILES;
    const int64_t t1 = t0 + (end - item) < TILES ? t0 + (end - item) : TILES;
    item += t1 - t0;
    const int64_t bz = group / PANELS, jc = group % PANELS * NC;
    const float *a = a_all + ($AOFF);
    const float *b = b_all + ($BOFF);
    float *c = c_all + bz * M * N;
    const int64_t nc = N - jc < NC ? N - jc : NC;
    for (int64_t pc = 0; pc < K; pc += KC) {
      const int64_t kc = K - pc < KC ? K - pc : KC;
      if ($GATHER == 2)  // B's rows gathered by runs along its innermost column axis, then copied to the panel
        for (int64_t kk = 0; kk < kc; kk++) {
          const int64_t k = pc + kk, ncp = (nc + NR - 1) / NR * NR;
$ROW_RUNS          for (int64_t x = nc; x < ncp; x++) bg[x] = 0.0f;
          for (int64_t x = 0; x < ncp; x += NR)
            for (int v = 0; v < NV; v++) { LOOM_GV y = LOOM_GLOAD(bg + x + v * W); LOOM_GSTORE(bp + x * kc + kk * NR + v * W, y); }
        }
      if ($GATHER == 3)  // B's columns gathered by runs along its innermost row axis, [column][term], then transposed
        for (int64_t x = 0; x < nc; x++) {
          const int64_t n = jc + x;
$COLUMN_RUNS        }
      if ($GATHER == 1)  // B read through its views: element (k, n) at $BINDEX where $BVALID, else zero
        for (int64_t kk = 0; kk < kc; kk++)
          for (int64_t x = 0, k = pc + kk; x < (nc + NR - 1) / NR * NR; x++) {
            const int64_t n = jc + x;
            bp[x / NR * NR * kc + kk * NR + x % NR] = x < nc && ($BVALID) ? b_all[$BINDEX] : 0.0f;
          }
      for (int64_t jr = 0; ($GATHER == 0 || $GATHER == 3) && jr < nc; jr += NR) {
        if (($BRS == 1 && $BCS != 1) || $GATHER == 3) {  // B column-major: W columns' runs of W terms transposed in registers
          for (int64_t x0 = 0; x0 < NR; x0 += W) {
            const int64_t kw = jr + x0 + W <= nc ? kc / W * W : 0;
            for (int64_t k0 = 0; k0 < kw; k0 += W) {
              const float *src = LOOM_BCOL(jr + x0) + k0;
              float *dst = bp + jr * kc + k0 * NR + x0;
$TRANSPOSE            }
            for (int64_t x = x0; x < x0 + W; x++) {  // the terms past the whole blocks; columns past n
              const float *src = LOOM_BCOL(jr + x);
              for (int64_t kk = kw; kk < kc; kk++) bp[jr * kc + kk * NR + x] = jr + x < nc ? src[kk] : 0.0f;
            }
          }
          continue;
        }
        for (int64_t kk = 0; kk < kc; kk++) {
          float *dst = bp + jr * kc + kk * NR;
          const float *src = b + (pc + kk) * $BRS + (jc + jr) * $BCS;
          if ($BCS == 1 && jr + NR <= nc) {
            for (int v = 0; v < NV; v++) { LOOM_GV x = LOOM_GLOAD(src + v * W); LOOM_GSTORE(dst + v * W, x); }
          } else {
            for (int64_t x = 0; x < NR; x++) dst[x] = jr + x < nc ? src[x * $BCS] : 0.0f;
          }
        }
      }
      for (int64_t t = t0; t < t1; t++) {
        const int64_t i0 = t * MR, rows = M - i0 < MR ? M - i0 : MR;
        const float *ar[MR];
        if (PACK_A && (t - t0) % CT == 0) {  // this tile and the next CT - 1 of the item's
          const int64_t tn = t1 - t < CT ? t1 - t : CT;
          for (int64_t kk = 0; kk < kc; kk++) {
            const float *src = a + (pc + kk) * $ACS;
            for (int64_t tt = 0; tt < tn; tt++) {
              float *dst = ap + (tt * kc + kk) * MR;
              const int64_t i = i0 + tt * MR;
              if (i + MR <= M) __builtin_memcpy(dst, src + i, sizeof(float) * MR);
              else for (int r = 0; r < MR; r++) dst[r] = src[i + r < M ? i + r : M - 1];
            }
          }
        }
        for (int r = 0; r < MR; r++)
          ar[r] = PACK_A ? ap + (t - t0) % CT * kc * MR + r : a + (i0 + (r < rows ? r : rows - 1)) * $ARS + pc * $ACS;
        for (int64_t jr = 0; jr < nc; jr += NR) {
          const float *bq = bp + jr * kc;
          float *ct = c + i0 * N + jc + jr;
          const int64_t cols = nc - jr < NR ? nc - jr : NR;
          const int full = rows == MR && cols == NR;
          float edge[MR][NR];
          LOOM_GV tot[MR][NV];
          if (pc > 0 && !full)
            for (int r = 0; r < MR; r++)
              for (int64_t x = 0; x < NR; x++) edge[r][x] = r < rows && x < cols ? ct[r * N + x] : 0.0f;
          for (int r = 0; r < MR; r++)
            for (int v = 0; v < NV; v++)
              tot[r][v] = pc == 0 ? (LOOM_GV){0} : full ? LOOM_GLOAD(ct + r * N + v * W) : LOOM_GLOAD(&edge[r][v * W]);
          for (int64_t k0 = 0; k0 < kc; k0 += P) {
            const int64_t k1 = k0 + P < kc ? k0 + P : kc;
            LOOM_GV acc[MR][NV];
            for (int r = 0; r < MR; r++)
              for (int v = 0; v < NV; v++) acc[r][v] = $PARTIAL ? (LOOM_GV){0} : tot[r][v];
            for (int64_t kk = k0; kk < k1; kk++) {
              LOOM_GV y[NV];
              for (int v = 0; v < NV; v++) y[v] = LOOM_GLOAD(bq + kk * NR + v * W);
              for (int v = 0; v < NV; v++) __builtin_prefetch(bq + (kk + PF) * NR + v * W);
#pragma GCC unroll 16
              for (int r = 0; r < MR; r++) {
                const LOOM_GV x = LOOM_GSPLAT(ar[r][kk * AK]);
                for (int v = 0; v < NV; v++) acc[r][v] = LOOM_GFOLD(x, y[v], acc[r][v]);
              }
            }
            for (int r = 0; r < MR; r++)
              for (int v = 0; v < NV; v++) tot[r][v] = $PARTIAL ? tot[r][v] + acc[r][v] : acc[r][v];
          }
          for (int r = 0; r < MR; r++)
            for (int v = 0; v < NV; v++) LOOM_GSTORE(full ? ct + r * N + v * W : &edge[r][v * W], tot[r][v]);
          if (!full)
            for (int r = 0; r < rows; r++)
              for (int64_t x = 0; x < cols; x++) ct[r * N + x] = edge[r][x];
        }
      }
    }
  }
  free(bp);
  free(ap);
  free(bg);
}
#undef LOOM_GV
#undef LOOM_GLOAD
#undef LOOM_GSPLAT
#undef LOOM_GSTORE
#undef LOOM_GFOLD
#undef LOOM_GSHUF
#undef LOOM_BCOL
#undef LOOM_BCS
)";

// Loads W columns' W consecutive terms (src, column stride LOOM_BCS), transposes
// them in registers (log2 W stages, each swapping bit h of the row index with
// bit h of the lane), and stores W rows of W columns (dst, row stride NR).
std::string transpose_block(int64_t w) {
  const std::string ind(14, ' ');
  auto v = [](int64_t i) { return "v" + std::to_string(i); };
  std::string s;
  for (int64_t c = 0; c < w; c++) s += ind + "LOOM_GV " + v(c) + " = LOOM_GLOAD(src + " + std::to_string(c) + " * LOOM_BCS);\n";
  for (int64_t h = w / 2; h >= 1; h /= 2)
    for (int64_t i = 0; i < w; i++) {
      if (i & h) continue;
      std::string lo, hi;
      for (int64_t j = 0; j < w; j++) {
        lo += (j ? ", " : "") + std::to_string(j & h ? w + j - h : j);
        hi += (j ? ", " : "") + std::to_string(j & h ? w + j : j + h);
      }
      s += ind + "{ const LOOM_GV p = LOOM_GSHUF(" + v(i) + ", " + v(i + h) + ", " + lo + "), q = LOOM_GSHUF(" + v(i) +
           ", " + v(i + h) + ", " + hi + "); " + v(i) + " = p; " + v(i + h) + " = q; }\n";
    }
  for (int64_t c = 0; c < w; c++) s += ind + "LOOM_GSTORE(dst + " + std::to_string(c) + " * NR, " + v(c) + ");\n";
  return s;
}

}  // namespace

std::string c_int64(int64_t v) { return std::to_string(v) + "LL"; }

std::string batch_offset(const schedule::GemmShape &g, const schedule::GemmOperand &o, const std::string &index) {
  std::string s = std::to_string(o.offset);
  int64_t inner = 1;
  for (size_t d = g.batch.size(); d-- > 0;) {
    s += " + ((" + index + " / " + std::to_string(inner) + ") % " + std::to_string(g.batch[d]) + ") * " +
         c_int64(o.batch_strides[d]);
    inner *= g.batch[d];
  }
  return s;
}

std::string render_c_gemm(const codegen::KernelSpec &p) {
  const schedule::GemmShape &g = *p.gemm;
  const codegen::GemmTiles &t = p.tiles;
  LOOM_CHECK(g.in == DType::Float32 && g.out == DType::Float32 && t.rows > 0, "not a float32 GEMM template: " + p.name);
  const std::string w = std::to_string(t.lanes);
  std::string s = kTemplate;
  // A placeholder that begins another ($N of $NC, $P of $PARTIAL) goes after it.
  fill_placeholder(s, "$TRANSPOSE", transpose_block(t.lanes));
  const std::optional<codegen::GatherIndex> gather = codegen::gather_index(g, true);
  LOOM_CHECK(!g.a.view && (gather || !g.b.view), "a gathered operand the GEMM template cannot read: " + p.name);
  // Runs along the longer of the columns' and the rows' innermost axes.
  std::optional<codegen::GatherRuns> runs = gather ? codegen::gather_runs(g, false) : std::nullopt;
  if (const auto down = gather ? codegen::gather_runs(g, true) : std::nullopt)
    if (!runs || down->run_size() > runs->run_size()) runs = down;
  fill_placeholder(s, "$ROW_RUNS", runs && !runs->along_rows ? runs_c(*runs, g) : "");
  fill_placeholder(s, "$COLUMN_RUNS", runs && runs->along_rows ? runs_c(*runs, g) : "");
  fill_placeholder(s, "$GATHER", runs ? (runs->along_rows ? "3" : "2") : gather ? "1" : "0");
  fill_placeholder(s, "$BCOLSTRIDE", runs && runs->along_rows ? "kc" : "$BCS");
  fill_placeholder(s, "$BCOL", runs && runs->along_rows ? "(bg + (x) * kc)" : "(b + pc + (jc + (x)) * $BCS)");
  fill_placeholder(s, "$BINDEX", gather && !runs ? gather_c(gather->flat, g) : "0");  // $GATHER == 1's only
  fill_placeholder(s, "$BVALID", gather && !runs ? gather_c(gather->valid, g) : "0");
  fill_placeholder(s, "$NAME", p.name);
  fill_placeholder(s, "$FOLD", t.fma ? "loom_vfmaf" + w + "(x, y, acc)" : "((acc) + (x) * (y))");
  fill_placeholder(s, "$MR", std::to_string(t.rows));
  fill_placeholder(s, "$NV", std::to_string(t.vectors));
  fill_placeholder(s, "$W", w);
  fill_placeholder(s, "$M", c_int64(g.m));
  fill_placeholder(s, "$NC", c_int64(t.columns));
  fill_placeholder(s, "$N", c_int64(g.n));
  fill_placeholder(s, "$KC", c_int64(t.depth));
  fill_placeholder(s, "$K", c_int64(g.k));
  fill_placeholder(s, "$TILES", c_int64(t.row_tiles(g.m)));
  fill_placeholder(s, "$PANELS", c_int64(t.panels(g.n)));
  fill_placeholder(s, "$PARTIAL", t.partial ? "1" : "0");
  fill_placeholder(s, "$P", c_int64(t.partial ? t.partial : t.depth));
  fill_placeholder(s, "$SA", std::to_string(g.a.slot));
  fill_placeholder(s, "$SB", std::to_string(g.b.slot));
  fill_placeholder(s, "$AOFF", batch_offset(g, g.a, "bz"));
  fill_placeholder(s, "$BOFF", gather ? "0" : batch_offset(g, g.b, "bz"));
  fill_placeholder(s, "$ARS", c_int64(g.a.row_stride));
  fill_placeholder(s, "$ACS", c_int64(g.a.col_stride));
  fill_placeholder(s, "$BRS", c_int64(g.b.row_stride));
  fill_placeholder(s, "$BCS", c_int64(g.b.col_stride));
  return s;
}

}  // namespace loom::renderer
