// loss_weight (program.h): torch-free, shared by the oracle and the engine side.
#include "program.h"

namespace loom::reference {

HostTensor loss_weight(const Shape &shape, DType dtype, uint64_t seed) {
  HostTensor w = HostTensor::contiguous(dtype, shape);
  for (int64_t i = 0; i < w.numel(); ++i) {
    const uint64_t k = (static_cast<uint64_t>(i) * 7 + seed) % 11;
    w.set(i, (static_cast<double>(k) - 5) / 4);
  }
  return w;
}

}  // namespace loom::reference
