// GEMM-shaped reductions. A kernel whose value sums a product of two float32
// operands, where past a common prefix of batch axes each output axis is read
// by one operand only, is a batch of matrix products
//   C[b][x][y] = sum_k A[b][x][k] * B[b][k][y]
// (a matmul, a linear layer, a convolution's forward and both backward passes
// over the windows the movement ops build). split_gemms cuts each such kernel
// doing at least gemm_min_macs() multiply-adds into
//   - a pack kernel per operand that is not already a strided matrix (a
//     convolution's windows, a fused prologue, a gradient read transposed):
//     its values in a row-major scratch buffer,
//   - one canonical GEMM kernel (gemm_shape() matches it), which the engine
//     runs as generated code or hands to the device's extern GEMM,
//   - an epilogue kernel, the rest of the original kernel reading the GEMM's
//     result, when the kernel computes more than the sum.
// Every element still sums its products in k order in generated code.
#pragma once
#include <optional>
#include <vector>

#include "schedule/schedule.h"

namespace loom::schedule {

// One operand of a canonical GEMM: element strides of its buffer (slot) for
// each batch axis and for its rows and columns (A: rows x, columns k;
// B: rows k, columns y). A batch stride of 0 broadcasts the operand.
struct GemmOperand {
  int64_t slot = 0, offset = 0;
  std::vector<int64_t> batch_strides;
  int64_t row_stride = 0, col_stride = 0;
};

// The canonical GEMM kernel: C (slot 0, row-major [batch..., m, n]) =
// A [batch..., m, k] times B [batch..., k, n], summed in float32. The
// operands are float32, or both float16 or both bfloat16 buffers widened to
// float32 as they are read (`in`); C is float32 or, with half operands,
// rounded to their dtype (`out`). split_gemms makes float32 ones only; a half
// one is a matmul of halves.
struct GemmShape {
  std::vector<int64_t> batch;
  int64_t m = 0, n = 0, k = 0;
  GemmOperand a, b;
  DType in = DType::Float32, out = DType::Float32;
};

// The GEMM a kernel AST is, when it is the canonical form: SINK(STORE(row-major
// [batch..., m, n], VIEW(REDUCE_AXIS(ADD over k, MUL(VIEW(A), VIEW(B)))))) over
// the shape [batch..., m, k, n], A not depending on n, B not on m, both one
// unmasked view (of halves: CAST to float32 of the views, and the stored
// value maybe CAST back). A plain matmul's kernel is one.
std::optional<GemmShape> gemm_shape(const UOpRef &ast);

// How a BLAS call reads a rows x cols operand of a row-major GEMM: as
// stored when its columns are unit-stride, through its transpose when its
// rows are, with the other stride as the leading dimension. nullopt when
// neither is unit-stride, a stride or the offset is negative, or the leading
// dimension is under the stored matrix's width or past 2^31 - 1.
struct BlasMatrix {
  bool transposed = false;
  int ld = 1;
};
std::optional<BlasMatrix> blas_matrix(const GemmOperand &o, int64_t rows, int64_t cols);

// Replaces each large GEMM-shaped item of `sched` by its pack, GEMM and
// epilogue items; their scratch buffers join `sched.transient`. Off under
// LOOM_NOOPT=1.
void split_gemms(Schedule &sched);

// The smallest batch * m * n * k split_gemms splits (LOOM_GEMM_MIN_MACS,
// default 2^22; m, n and k must be 8 or more too, except at 0, which splits
// every GEMM-shaped kernel: tests send small kernels down the path with it).
// Returns the previous value.
int64_t set_gemm_min_macs(int64_t macs);
int64_t gemm_min_macs();

}  // namespace loom::schedule
