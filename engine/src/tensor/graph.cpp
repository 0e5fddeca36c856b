#include "tensor/graph.h"

#include "loom/error.h"

namespace loom::tensor {

std::string describe(const UOpRef &u) { return shape_str(shape_of(u)) + " " + dtype_name(u->dtype); }

int64_t wrap_dim(int64_t dim, int64_t ndim, const char *op) {
  int64_t n = std::max<int64_t>(ndim, 1);  // torch lets 0-d tensors use dim 0 / -1
  if (dim < -n || dim >= n)
    throw IndexError(std::string(op) + ": Dimension out of range (expected to be in range of [" + std::to_string(-n) +
                     ", " + std::to_string(n - 1) + "], but got " + std::to_string(dim) + ")");
  return dim < 0 ? dim + n : dim;
}

}  // namespace loom::tensor
