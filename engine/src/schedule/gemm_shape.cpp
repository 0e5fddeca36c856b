#include "schedule/gemm_shape.h"

#include <algorithm>
#include <climits>

namespace loom::schedule {

std::optional<BlasMatrix> blas_matrix(const GemmOperand &o, int64_t rows, int64_t cols) {
  if (o.view || o.row_stride < 0 || o.col_stride < 0 || o.offset < 0) return std::nullopt;
  BlasMatrix m;
  int64_t lead = 0;
  if (o.col_stride == 1 && (rows == 1 || o.row_stride >= cols)) {
    lead = rows == 1 ? cols : o.row_stride;
  } else if (o.row_stride == 1 && (cols == 1 || o.col_stride >= rows)) {
    m.transposed = true;
    lead = cols == 1 ? rows : o.col_stride;
  } else {
    return std::nullopt;
  }
  lead = std::max<int64_t>(lead, 1);
  if (lead > INT_MAX) return std::nullopt;
  m.ld = static_cast<int>(lead);
  return m;
}

}  // namespace loom::schedule
