// The canonical GEMM kernel the scheduler marks (schedule/gemm.h): the
// description its ScheduleItem carries (`gemm`), which codegen, the renderers
// and the devices' extern GEMMs read instead of matching the AST again.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "loom/dtype.h"
#include "shape/shape_tracker.h"

namespace loom::schedule {

// One operand of a canonical GEMM: element strides of its buffer (slot) for
// each batch axis and for its rows and columns (A: rows x, columns k;
// B: rows k, columns y). A batch stride of 0 broadcasts the operand.
// A gathered operand (`view` set) is read through that tracker over the
// GEMM's shape [batch..., m, k, n], zero where it is masked (a
// convolution's windows read in place: set_gemm_gathers); its strides are
// unused, and no BLAS reads it.
struct GemmOperand {
  int64_t slot = 0, offset = 0;
  std::vector<int64_t> batch_strides;
  int64_t row_stride = 0, col_stride = 0;
  std::shared_ptr<const shape::ShapeTracker> view;
};

// The canonical GEMM kernel: C (slot 0, row-major [batch..., m, n]) =
// A [batch..., m, k] times B [batch..., k, n], summed in float32. The
// operands are float32, or both float16 or both bfloat16 buffers widened to
// float32 as they are read (`in`); C is float32 or, with half operands,
// rounded to their dtype (`out`). With an `epilogue` (of half operands),
// the kernel stores more than the sum: SINK(STORE(out, E)) where E, of
// dtype `out`, is an elementwise function of the sum (a VIEW(REDUCE_AXIS)
// of the form above, [batch..., m, 1, n]) read in place and of other
// buffers, constants and runtime scalars (a bias, BatchNorm's scale and
// shift, GELU, a residual), `out` contiguous with one element per element
// of C: the tensor-core template computes E from each element's sum as it
// stores it; no library takes it.
struct GemmShape {
  std::vector<int64_t> batch;
  int64_t m = 0, n = 0, k = 0;
  GemmOperand a, b;
  DType in = DType::Float32, out = DType::Float32;
  bool epilogue = false;
};

// How a BLAS call reads a rows x cols operand of a row-major GEMM: as
// stored when its columns are unit-stride, through its transpose when its
// rows are, with the other stride as the leading dimension. nullopt when
// neither is unit-stride, a stride or the offset is negative, or the leading
// dimension is under the stored matrix's width or past 2^31 - 1, or the
// operand is gathered.
struct BlasMatrix {
  bool transposed = false;
  int ld = 1;
};
std::optional<BlasMatrix> blas_matrix(const GemmOperand &o, int64_t rows, int64_t cols);

}  // namespace loom::schedule
