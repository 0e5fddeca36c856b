#include "tensor/mask_positions.h"

#include <climits>
#include <cmath>
#include <string>

#include "engine/capture.h"
#include "loom/error.h"
#include "tensor/ops_util.h"

namespace loom::tensor {

namespace {

// The positions of a row-major 0/1 byte mask's ones, as index type I.
// Branch-free up to the last one: each position is written, and kept by
// moving past it when the mask holds a one there.
template <typename I>
Tensor ones_positions(const uint8_t *m, int64_t n, int64_t count, DType dtype) {
  HostTensor h = HostTensor::contiguous(dtype, {count});
  if (count == 0) return Tensor::from_host(h);
  I *out = reinterpret_cast<I *>(h.storage->data());
  int64_t last = n - 1;
  while (m[last] == 0) last--;
  int64_t k = 0;
  for (int64_t i = 0; i <= last; i++) {
    out[k] = static_cast<I>(i);
    k += m[i];
  }
  return Tensor::from_host(h);
}

// On the host: int32 where the positions fit (half the bytes to upload and
// read), else int64. torch's masks hold 0 and 1 only.
Tensor positions_on_host(const Tensor &mask, const char *op) {
  const HostTensor h = mask.to_host();  // row-major, a byte an element (bool or uint8)
  const uint8_t *m = h.storage->data();
  const int64_t n = h.numel();
  int64_t count = 0;
  uint8_t bits = 0;
  for (int64_t i = 0; i < n; i++) {
    count += m[i];
    bits |= m[i];
  }
  if (bits & ~1) throw Error(std::string(op) + ": Mask tensor can take 0 and 1 values only");
  return n <= INT32_MAX ? ones_positions<int32_t>(m, n, count, DType::Int32)
                        : ones_positions<int64_t>(m, n, count, DType::Int64);
}

// Inclusive running sums of a 1-d tensor's values, int64: rows of about
// sqrt(n) scanned, then the rows' totals, so no scan (one thread's loop on a
// GPU) runs longer than about sqrt(n).
Tensor running_sum(const Tensor &v) {
  const int64_t n = v.numel();
  const int64_t row = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(std::sqrt(static_cast<double>(n)))));
  const int64_t rows = (n + row - 1) / row;
  const Tensor within = v.pad({{0, rows * row - n}}).reshape({rows, row}).cumsum(1);  // int64
  const Tensor totals = within.shrink({{0, rows}, {row - 1, row}});
  return within.add(totals.cumsum(0).sub(totals)).reshape({rows * row}).shrink({{0, n}});
}

}  // namespace

Tensor mask_positions_searched(const Tensor &mask) {
  const int64_t n = mask.numel();
  if (n == 0) return Tensor::zeros({0}, DType::Int64);
  std::vector<Tensor> counts{running_sum(mask.reshape({n}).cast(DType::Int32))};
  realize_all(counts);  // searched many times below: computed once
  const int64_t count = static_cast<int64_t>(counts[0].shrink({{n - 1, n}}).item());
  if (count == 0) return Tensor::zeros({0}, DType::Int64);
  // 1..count made on the device (a long arange is built on the host and uploaded).
  const Tensor target = running_sum(Tensor::ones({count}, DType::Int32));
  const Tensor one = Tensor::full({}, 1, DType::Int64);
  Tensor lo = Tensor::zeros({count}, DType::Int64), hi = Tensor::full({count}, n - 1, DType::Int64);
  for (int64_t width = 1; width < n; width *= 2) {  // ceil(log2(n)) halvings close every interval
    const Tensor mid = lo.add(hi).bitwise_right_shift(one);
    const Tensor before = gather_along(counts[0], 0, mid).lt(target);
    lo = before.where(mid.add(one), lo);
    hi = before.where(hi, mid);
  }
  return lo;
}

Tensor mask_positions(const Tensor &mask, const char *op) {
  if (mask.dtype() == DType::Bool && !engine::host_addressable()) return mask_positions_searched(mask);
  return positions_on_host(mask, op);
}

}  // namespace loom::tensor
