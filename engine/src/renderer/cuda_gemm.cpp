#include "renderer/cuda_gemm.h"

#include <cctype>
#include <utility>

#include "codegen/gemm_epilogue.h"
#include "loom/error.h"
#include "renderer/c_gemm.h"
#include "renderer/c_gemm_gather.h"
#include "renderer/c_vector.h"
#include "renderer/cuda_renderer.h"
#include "shape/view.h"

namespace loom::renderer {

using uop::UOpRef;

namespace {

constexpr int64_t kTerms = 32;  // BK: the terms a block stages at a time
constexpr int64_t kGroup = 8;   // halves in one asynchronous 16-byte copy

// 8 warps, 2 x 4 of 64 x 32 tiles.
static_assert(kCudaGemmRows == 2 * 64 && kCudaGemmCols == 4 * 32 && kCudaGemmThreads == 8 * 32);
// A thread's elements of a tile keep their row (or column, or term) at every step.
static_assert(kCudaGemmThreads % kCudaGemmRows == 0 && kCudaGemmThreads % kCudaGemmCols == 0 &&
              kCudaGemmThreads % kTerms == 0);

// $-names are replaced by the kernel's constants and the operands' code
// (stage_code). A block of 8 warps computes a BM x BN tile of C: warp w the
// 64 x 32 tile at rows 64 (w / 4), columns 32 (w % 4), as 4 x 4
// mma.m16n8k16 tiles with float accumulators. The operands' tiles of BK
// terms go through two stages of shared memory: while the warps multiply
// the tiles of one stage, the next step's are on their way to the other,
// as asynchronous copies (cp.async) or in registers, stored once the step's
// products are done. Each warp takes its fragments from shared memory with
// ldmatrix (transposed where the tile is stored by terms' rows or columns).
// Two blocks fit an SM: 128 registers a thread (ptxas -v for sm_90: no
// spills) and under 48 KiB of shared memory a block.
constexpr const char *kTemplate = R"(extern "C" __global__ void __launch_bounds__($THREADS, 2) $NAME($PARAMS) {
  enum { BM = $BM, BN = $BN, BK = $BK, THREADS = $THREADS, LDA = $LDA, LDB = $LDB, SA = $SA_HALVES, SB = $SB_HALVES };
  const int64_t M = $M, N = $N, K = $K;
  __shared__ __align__(16) uint16_t sa[2 * SA], sb[2 * SB];  // two stages of each operand's tile
  const int64_t tiles_n = (N + BN - 1) / BN, tiles_m = (M + BM - 1) / BM;
  const int64_t bx = blockIdx.x % tiles_n, by = blockIdx.x / tiles_n % tiles_m, bz = blockIdx.x / (tiles_n * tiles_m);
  const int tid = threadIdx.x, lane = tid & 31, q = lane >> 3, r8 = lane & 7;
  const int wm = (tid >> 5) / 4 * 64, wn = (tid >> 5) % 4 * 32;
  const int64_t m0 = by * BM, n0 = bx * BN;
  const uint16_t *const a = data$A_SLOT + ($A_OFFSET), *const b = data$B_SLOT + ($B_OFFSET);
$A_REGS$B_REGS  // The terms [k0, k0 + BK) on their way to stage st; put() stores what came through registers.
  auto fetch = [&](int st, int64_t k0) {
$A_FETCH$B_FETCH    loom_cp_async_commit();
  };
  auto put = [&](int st) {
$A_PUT$B_PUT  };
  float acc[4][4][4] = {};
  fetch(0, 0);
  put(0);
  int st = 0;
  for (int64_t k0 = 0; k0 < K; k0 += BK, st ^= 1) {
    const bool more = k0 + BK < K;
    if (more) {
      fetch(st ^ 1, k0 + BK);
      loom_cp_async_wait1();  // this stage's copies have landed, the next one's may not have
    } else {
      loom_cp_async_wait0();
    }
    __syncthreads();
    const uint16_t *const ta = sa + st * SA, *const tb = sb + st * SB;
    for (int ks = 0; ks < BK; ks += 16) {
      uint32_t fa[4][4], fb[4][2];
      for (int i = 0; i < 4; i++) $A_LDSM(fa[i], ta + $A_FRAG);
      for (int j = 0; j < 2; j++) {  // fb[2 j] and fb[2 j + 1] in one ldmatrix
        uint32_t f[4];
        $B_LDSM(f, tb + $B_FRAG);
        fb[2 * j][0] = f[0], fb[2 * j][1] = f[1], fb[2 * j + 1][0] = f[2], fb[2 * j + 1][1] = f[3];
      }
      for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) $MMA(acc[i][j], fa[i], fb[j]);
    }
    if (more) put(st ^ 1);
    __syncthreads();
  }
#pragma unroll  // constant indices: acc stays in registers however long the epilogue
  for (int i = 0; i < 4; i++)
#pragma unroll
    for (int j = 0; j < 4; j++)
#pragma unroll
      for (int c = 0; c < 4; c++) {  // accumulator c: row lane / 4 (+8 for c >= 2), column 2 (lane % 4) + (c & 1)
        const int64_t row = m0 + wm + 16 * i + (lane >> 2) + 8 * (c >> 1), col = n0 + wn + 8 * j + 2 * (lane & 3) + (c & 1);
        if (row < M && col < N) $STORE_ELEMENT
      }
}
)";

// One operand's tile in shared memory and how it gets there. Its `outer`
// coordinate is A's row (m) or B's column (n), `tile` of them per block.
// By terms, the tile is stored [outer][term] (each outer's terms
// consecutive), else [term][outer], whichever the operand's unit stride
// runs along. Asynchronous copies move 8 halves at once where every group
// of 8 starts 16-byte aligned and runs along the unit stride within one
// outer (or term); otherwise each element comes through a register.
struct Staging {
  Staging(char x, std::string outer, std::string outer0, std::string extent, int64_t tile)
      : x(x), outer(std::move(outer)), outer0(std::move(outer0)), extent(std::move(extent)), tile(tile) {}
  char x;                             // 'a' or 'b'
  std::string outer, outer0, extent;  // its coordinate's name, the block's first, the GEMM's size
  int64_t tile;
  bool by_terms = false, copies = false;
  std::string element, valid;  // the element's index from the operand's base, and its validity beyond the edges
  int64_t pitch() const { return (by_terms ? kTerms : tile) + kGroup; }  // 8 halves of padding: no bank conflicts
  int64_t halves() const { return (by_terms ? tile : kTerms) * pitch(); }
};

// A thread's unit i of the tile (`per` halves: 1, or 8 in a copy): unit
// tid + i THREADS, numbered along the stored rows, as its outer and term
// offsets in the tile. A thread keeps its outer (or term) at every i, and
// its outer's index arithmetic stays out of the loops.
std::string coordinates(const Staging &s, int64_t per) {
  const int64_t row_units = (s.by_terms ? kTerms : s.tile) / per, rows_per_step = kCudaGemmThreads / row_units;
  const std::string across = "tid % " + std::to_string(row_units) + " * " + std::to_string(per),
                    down = "tid / " + std::to_string(row_units) + " + i * " + std::to_string(rows_per_step);
  return "const int o = " + (s.by_terms ? down : across) + ", kk = " + (s.by_terms ? across : down) + ";";
}

std::string upper(const Staging &s) { return std::string(1, static_cast<char>(std::toupper(s.x))); }

// The unit's place in stage st.
std::string slot(const Staging &s) {
  const std::string ld = "LD" + upper(s);
  return std::string("s") + s.x + "[st * S" + upper(s) + " + " + (s.by_terms ? "o * " + ld + " + kk" : "kk * " + ld + " + o") + "]";
}

int64_t per_thread(const Staging &s, int64_t per) { return s.tile * kTerms / per / kCudaGemmThreads; }

// The operand's statements in the template: registers, fetch, put.
struct StageCode {
  std::string regs, fetch, put;
};

StageCode stage_code(const Staging &s) {
  const std::string ind = "    ", loop = "    for (int i = 0; i < ";
  const std::string r = std::string("r") + s.x, at = s.outer + " = " + s.outer0 + " + o, k = k0 + kk";
  if (s.copies) {  // the valid halves of the group: past K or the extent, zero
    const int64_t n = per_thread(s, kGroup);
    const std::string left = s.by_terms ? s.outer + " < " + s.extent + " ? K - k : 0" : "k < K ? " + s.extent + " - " + s.outer + " : 0";
    return {"", loop + std::to_string(n) + "; i++) {\n" + ind + "  " + coordinates(s, kGroup) + "\n" + ind +
                    "  const int64_t " + at + ", left = " + left + ";\n" + ind +
                    "  const int bytes = left <= 0 ? 0 : left >= 8 ? 16 : (int)left * 2;\n" + ind +
                    "  loom_cp_async16(&" + slot(s) + ", bytes ? " + s.x + " + (" + s.element + ") : " + s.x + ", bytes);\n" + ind + "}\n",
            ""};
  }
  const int64_t n = per_thread(s, 1);
  return {"  uint16_t " + r + "[" + std::to_string(n) + "];\n",
          loop + std::to_string(n) + "; i++) {\n" + ind + "  " + coordinates(s, 1) + "\n" + ind + "  const int64_t " + at +
              ";\n" + ind + "  " + r + "[i] = " + s.outer + " < " + s.extent + " && k < K" + s.valid + " ? " + s.x + "[" +
              s.element + "] : (uint16_t)0;\n" + ind + "}\n",
          loop + std::to_string(n) + "; i++) {\n" + ind + "  " + coordinates(s, 1) + "\n" + ind + "  " + slot(s) + " = " + r +
              "[i];\n" + ind + "}\n"};
}

// Whether every group of 8 along the unit stride starts 16-byte aligned:
// the operand's offset, batch strides and other stride are multiples of 8.
bool aligned_groups(const schedule::GemmOperand &o, int64_t other_stride) {
  bool ok = o.offset % kGroup == 0 && other_stride % kGroup == 0;
  for (int64_t s : o.batch_strides) ok = ok && s % kGroup == 0;
  return ok;
}

// Whether the GEMM's coordinates k and n (or m), and so their quotients and
// remainders, fit 32 bits to the edge of the last tile.
bool narrow_coordinates(const schedule::GemmShape &g) {
  return g.k + kTerms < (int64_t{1} << 31) && g.n + kCudaGemmCols < (int64_t{1} << 31) &&
         g.m + kCudaGemmRows < (int64_t{1} << 31);
}

// Whether a gathered A without batch axes (a weight gradient's output
// gradient: the merge of [m, k, n] over the buffer's view [m, k's axes...])
// holds each group of 8 terms from a multiple of 8 in 16 consecutive,
// 16-byte aligned bytes: k's innermost axes run contiguously for a multiple
// of 8 elements (an image's Ho * Wo pixels), its other strides, m's and the
// offset are multiples of 8.
bool aligned_term_groups(const schedule::GemmShape &g) {
  const shape::ViewStack &v = g.a.view->views;
  if (!g.batch.empty() || v.size() != 2) return false;
  const shape::View &top = v[1], &mem = v[0];
  if (top.mask || top.offset != 0 || top.shape != Shape{g.m, g.k, g.n} || top.strides != shape::Strides{g.k, 1, 0} ||
      mem.mask || mem.offset % kGroup != 0 || mem.shape.empty() || mem.shape[0] != g.m ||
      (g.m > 1 && mem.strides[0] % kGroup != 0))
    return false;
  int64_t run = 1;
  bool running = true;
  for (size_t d = mem.shape.size(); d-- > 1;) {
    if (mem.shape[d] == 1) continue;
    if (running && mem.strides[d] == run) {
      run *= mem.shape[d];
      continue;
    }
    running = false;
    if (mem.strides[d] % kGroup != 0) return false;
  }
  return run % kGroup == 0;
}

Staging a_staging(const schedule::GemmShape &g, const std::optional<codegen::GatherIndex> &gather) {
  Staging s('a', "row", "m0", "M", kCudaGemmRows);
  if (gather) {  // a weight gradient's output gradient: consecutive terms, consecutive pixels
    s.by_terms = true;
    s.copies = aligned_term_groups(g);
    s.element = gather_c(gather->flat, g, narrow_coordinates(g), "row", "k");
    s.valid = " && " + gather_c(gather->valid, g, narrow_coordinates(g), "row", "k");
    return s;
  }
  s.by_terms = g.a.col_stride == 1;
  s.copies = (s.by_terms || g.a.row_stride == 1) && aligned_groups(g.a, s.by_terms ? g.a.row_stride : g.a.col_stride);
  s.element = "row * " + c_int64(g.a.row_stride) + " + k * " + c_int64(g.a.col_stride);
  return s;
}

Staging b_staging(const schedule::GemmShape &g, const std::optional<codegen::GatherIndex> &gather) {
  Staging s('b', "n", "n0", "N", kCudaGemmCols);
  if (gather) {  // a convolution's windows: consecutive columns, consecutive pixels
    s.element = gather_c(gather->flat, g, narrow_coordinates(g));
    s.valid = " && " + gather_c(gather->valid, g, narrow_coordinates(g));
    return s;
  }
  s.by_terms = g.b.row_stride == 1 && g.b.col_stride != 1;
  s.copies = (s.by_terms || g.b.col_stride == 1) && aligned_groups(g.b, s.by_terms ? g.b.col_stride : g.b.row_stride);
  s.element = "k * " + c_int64(g.b.row_stride) + " + n * " + c_int64(g.b.col_stride);
  return s;
}

// A's fragment i (rows wm + 16 i, terms ks): ldmatrix's matrix q holds
// rows + 8 (q & 1), terms + 8 (q >> 1); B's pair j (columns wn + 16 j):
// matrix q holds terms + 8 (q & 1), columns + 8 (q >> 1). Lane r8 + 8 q
// gives matrix q's row r8 (of the stored tile).
std::string fragment(const Staging &s) {
  const std::string ld = "LD" + upper(s);
  const std::string o = s.x == 'a' ? "wm + 16 * i" : "wn + 16 * j", ho = s.x == 'a' ? "(q & 1)" : "(q >> 1)",
                    ht = s.x == 'a' ? "(q >> 1)" : "(q & 1)";
  if (s.by_terms) return "(" + o + " + r8 + 8 * " + ho + ") * " + ld + " + ks + 8 * " + ht;
  return "(ks + r8 + 8 * " + ht + ") * " + ld + " + " + o + " + 8 * " + ho;
}

void fill_operand(std::string &t, const Staging &s, const std::string &offset) {
  const std::string X = upper(s);
  const StageCode c = stage_code(s);
  fill_placeholder(t, "$" + X + "_REGS", c.regs);
  fill_placeholder(t, "$" + X + "_FETCH", c.fetch);
  fill_placeholder(t, "$" + X + "_PUT", c.put);
  fill_placeholder(t, "$" + X + "_LDSM", s.by_terms ? "loom_ldsm_x4" : "loom_ldsm_x4_trans");
  fill_placeholder(t, "$" + X + "_FRAG", fragment(s));
  fill_placeholder(t, "$" + X + "_OFFSET", offset);
  fill_placeholder(t, "$LD" + X, std::to_string(s.pitch()));
  fill_placeholder(t, "$S" + X + "_HALVES", std::to_string(s.halves()));
}

// The statement storing accumulator c of tile (i, j) at (row, col) of
// batch bz: its sum, rounded to the output's dtype where that is a half,
// or the kernel's epilogue computed from it (codegen/gemm_epilogue.h).
std::string store_element(const codegen::KernelSpec &p, const schedule::GemmShape &g) {
  const std::string at = "data0[bz * M * N + row * N + col] = ";
  if (!g.epilogue)
    return at + (g.out == DType::Float16 ? "loom_f2h" : g.out == DType::BFloat16 ? "loom_f2bf" : "") + "(acc[i][j][c]);";
  const codegen::GemmEpilogue e = codegen::gemm_epilogue(p.library, g);
  const std::vector<std::pair<UOpRef, std::string>> bound{
      {e.sum, "acc[i][j][c]"}, {e.batch, "bz"}, {e.row, "row"}, {e.col, "col"}};
  std::string stored;
  const std::string indent(10, ' '), code = render_cuda_values(p, e.value, bound, indent, stored);
  return "{\n" + code + indent + at + stored + ";\n        }";
}

}  // namespace

std::string render_cuda_gemm(const codegen::KernelSpec &p, const schedule::GemmShape &g) {
  const std::optional<codegen::GatherIndex> gather = codegen::gather_index(g, true), gather_a = codegen::gather_index(g, false);
  LOOM_CHECK((gather_a || !g.a.view) && (gather || !g.b.view), "a gathered operand the tensor-core GEMM cannot read: " + p.name);
  std::string s = kTemplate;
  fill_placeholder(s, "$NAME", p.name);
  fill_placeholder(s, "$PARAMS", cuda_param_decls(p));
  fill_placeholder(s, "$THREADS", std::to_string(kCudaGemmThreads));
  fill_placeholder(s, "$BM", std::to_string(kCudaGemmRows));
  fill_placeholder(s, "$BN", std::to_string(kCudaGemmCols));
  fill_placeholder(s, "$BK", std::to_string(kTerms));
  fill_operand(s, a_staging(g, gather_a), gather_a ? "0" : batch_offset(g, g.a, "bz"));
  fill_operand(s, b_staging(g, gather), gather ? "0" : batch_offset(g, g.b, "bz"));
  fill_placeholder(s, "$A_SLOT", std::to_string(g.a.slot));
  fill_placeholder(s, "$B_SLOT", std::to_string(g.b.slot));
  fill_placeholder(s, "$MMA", g.in == DType::Float16 ? "loom_mma_f16" : "loom_mma_bf16");
  fill_placeholder(s, "$STORE_ELEMENT", store_element(p, g));
  fill_placeholder(s, "$M", c_int64(g.m));
  fill_placeholder(s, "$N", c_int64(g.n));
  fill_placeholder(s, "$K", c_int64(g.k));
  return s;
}

int64_t cuda_gemm_blocks(const schedule::GemmShape &g) {
  return (g.m + kCudaGemmRows - 1) / kCudaGemmRows * ((g.n + kCudaGemmCols - 1) / kCudaGemmCols) * shape::prod(g.batch);
}

}  // namespace loom::renderer
