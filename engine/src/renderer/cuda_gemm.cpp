#include "renderer/cuda_gemm.h"

#include "loom/error.h"
#include "renderer/c_gemm.h"
#include "renderer/c_gemm_gather.h"
#include "renderer/c_vector.h"
#include "shape/view.h"

namespace loom::renderer {

namespace {

// 8 warps, 2 x 4 of 64 x 32 tiles.
static_assert(kCudaGemmRows == 2 * 64 && kCudaGemmCols == 4 * 32 && kCudaGemmThreads == 8 * 32);

// $-names are replaced by the kernel's constants. A block of 8 warps computes
// a BM x BN tile of C: warp w the 64 x 32 tile at rows 64 (w / 4), columns
// 32 (w % 4), as 4 x 4 mma.m16n8k16 tiles with float accumulators. Each step
// of BK terms, the block's threads copy A's BM x BK tile and B's BK x BN tile
// to shared memory (zero past the edges; B's stored by columns, so that both
// operands' fragments are pairs of consecutive terms, 32 bits each), reading
// along whichever dimension the operand's unit stride is, then every warp
// takes its fragments from there (PTX's fragment layouts: lane = 4 grp + t).
// Rows of the tiles are padded by 8 halves: the fragments' 8 rows then fall
// on distinct banks. A gathered B (codegen/gemm_gather.h: a convolution's
// windows) is read element by element through its views, zero where they
// mask it: an implicit GEMM, no pack in global memory.
constexpr const char *kTemplate = R"(extern "C" __global__ void __launch_bounds__($THREADS) $NAME($PARAMS) {
  enum { BM = $BM, BN = $BN, BK = 32, LD = BK + 8 };
  const int64_t M = $M, N = $N, K = $K;
  __shared__ uint32_t sa[BM * LD / 2], sb[BN * LD / 2];  // halves in pairs: [row][term], [column][term]
  uint16_t *const ha = (uint16_t *)sa, *const hb = (uint16_t *)sb;
  const int64_t tiles_n = (N + BN - 1) / BN, tiles_m = (M + BM - 1) / BM;
  const int64_t bx = blockIdx.x % tiles_n, by = blockIdx.x / tiles_n % tiles_m, bz = blockIdx.x / (tiles_n * tiles_m);
  const int tid = threadIdx.x, lane = tid & 31, grp = lane >> 2, t = lane & 3;
  const int wm = (tid >> 5) / 4 * 64, wn = (tid >> 5) % 4 * 32;
  const int64_t m0 = by * BM, n0 = bx * BN;
  const uint16_t *a = data$SA + ($AOFF);
  float acc[4][4][4] = {};
  for (int64_t k0 = 0; k0 < K; k0 += BK) {
    for (int e = tid; e < BM * BK; e += $THREADS) {
      const int r = $A_ROW, kk = $A_TERM;
      const int64_t row = m0 + r, k = k0 + kk;
      ha[r * LD + kk] = row < M && k < K ? a[row * $ARS + k * $ACS] : (uint16_t)0;
    }
    for (int e = tid; e < BN * BK; e += $THREADS) {
      const int c = $B_COL, kk = $B_TERM;
      const int64_t n = n0 + c, k = k0 + kk;
      hb[c * LD + kk] = n < N && k < K$B_VALID ? data$SB[$B_INDEX] : (uint16_t)0;
    }
    __syncthreads();
    for (int ks = 0; ks < BK; ks += 16) {
      uint32_t fa[4][4], fb[4][2];
      for (int i = 0; i < 4; i++)
        for (int r = 0; r < 4; r++)  // rows grp (+8 for r odd), terms 2t, 2t+1 (+8 for r >= 2)
          fa[i][r] = sa[((wm + 16 * i + grp + 8 * (r & 1)) * LD + ks + 2 * t + 8 * (r >> 1)) / 2];
      for (int j = 0; j < 4; j++)
        for (int r = 0; r < 2; r++)  // terms 2t, 2t+1 (+8 for r = 1), column grp
          fb[j][r] = sb[((wn + 8 * j + grp) * LD + ks + 2 * t + 8 * r) / 2];
      for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) $MMA(acc[i][j], fa[i], fb[j]);
    }
    __syncthreads();
  }
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 4; j++)
      for (int q = 0; q < 4; q++) {  // c(q): row grp (+8 for q >= 2), column 2t + (q & 1)
        const int64_t row = m0 + wm + 16 * i + grp + 8 * (q >> 1), col = n0 + wn + 8 * j + 2 * t + (q & 1);
        if (row < M && col < N) data0[bz * M * N + row * N + col] = $STORE(acc[i][j][q]);
      }
}
)";

}  // namespace

std::string render_cuda_gemm(const codegen::KernelSpec &p, const schedule::GemmShape &g) {
  std::string params = std::string(g.out == DType::Float32 ? "float" : "uint16_t") + " *__restrict__ data0";
  for (size_t i = 1; i < p.buf_dtypes.size(); i++) params += ", const uint16_t *__restrict__ data" + std::to_string(i);
  // Consecutive threads read consecutive addresses: along k where the
  // operand's terms are unit-stride, else along its rows (A) or columns (B).
  const bool a_terms = g.a.col_stride == 1, b_terms = !g.b.view && g.b.row_stride == 1 && g.b.col_stride != 1;
  const std::optional<codegen::GatherIndex> gather = codegen::gather_index(g, true);
  LOOM_CHECK(!g.a.view && (gather || !g.b.view), "a gathered operand the tensor-core GEMM cannot read: " + p.name);
  std::string s = kTemplate;
  fill_placeholder(s, "$NAME", p.name);
  fill_placeholder(s, "$PARAMS", params);
  fill_placeholder(s, "$THREADS", std::to_string(kCudaGemmThreads));
  fill_placeholder(s, "$BM", std::to_string(kCudaGemmRows));
  fill_placeholder(s, "$BN", std::to_string(kCudaGemmCols));
  fill_placeholder(s, "$A_ROW", a_terms ? "e / BK" : "e % BM");
  fill_placeholder(s, "$A_TERM", a_terms ? "e % BK" : "e / BM");
  fill_placeholder(s, "$B_COL", b_terms ? "e / BK" : "e % BN");
  fill_placeholder(s, "$B_TERM", b_terms ? "e % BK" : "e / BN");
  fill_placeholder(s, "$MMA", g.in == DType::Float16 ? "loom_mma_f16" : "loom_mma_bf16");
  fill_placeholder(s, "$STORE", g.out == DType::Float16 ? "loom_f2h" : g.out == DType::BFloat16 ? "loom_f2bf" : "");
  fill_placeholder(s, "$M", c_int64(g.m));
  fill_placeholder(s, "$N", c_int64(g.n));
  fill_placeholder(s, "$K", c_int64(g.k));
  fill_placeholder(s, "$SA", std::to_string(g.a.slot));
  fill_placeholder(s, "$SB", std::to_string(g.b.slot));
  fill_placeholder(s, "$AOFF", batch_offset(g, g.a, "bz"));
  fill_placeholder(s, "$B_VALID", gather ? " && " + gather_c(gather->valid, g) : "");
  fill_placeholder(s, "$B_INDEX", gather ? gather_c(gather->flat, g) : "(" + batch_offset(g, g.b, "bz") + ") + k * $BRS + n * $BCS");
  fill_placeholder(s, "$ARS", c_int64(g.a.row_stride));
  fill_placeholder(s, "$ACS", c_int64(g.a.col_stride));
  fill_placeholder(s, "$BRS", c_int64(g.b.row_stride));
  fill_placeholder(s, "$BCS", c_int64(g.b.col_stride));
  return s;
}

int64_t cuda_gemm_blocks(const schedule::GemmShape &g) {
  return (g.m + kCudaGemmRows - 1) / kCudaGemmRows * ((g.n + kCudaGemmCols - 1) / kCudaGemmCols) * shape::prod(g.batch);
}

}  // namespace loom::renderer
