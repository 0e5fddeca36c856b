// The lazy Tensor API. Every op builds a UOp graph; nothing runs until
// realize()/to_host(). Movement ops never copy: they change the view.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "loom/dtype.h"
#include "loom/error.h"
#include "loom/host.h"

namespace loom {
namespace uop {
class UOp;
}
using UOpRef = std::shared_ptr<const uop::UOp>;
using Dims = std::vector<int64_t>;

class Tensor {
 public:
  Tensor();  // a 0-d float32 zero
  explicit Tensor(UOpRef uop);

  // ---- creation
  static Tensor empty(const Shape &shape, DType dtype = DType::Float32);
  static Tensor zeros(const Shape &shape, DType dtype = DType::Float32);
  static Tensor ones(const Shape &shape, DType dtype = DType::Float32);
  static Tensor full(const Shape &shape, Scalar value, std::optional<DType> dtype = std::nullopt);
  // torch.arange: int64 when start/end/step are all integral, else float32 (unless dtype is given).
  static Tensor arange(Scalar end, std::optional<DType> dtype = std::nullopt);
  static Tensor arange(Scalar start, Scalar end, Scalar step = 1, std::optional<DType> dtype = std::nullopt);
  // Copies the host storage into a new buffer and views it exactly as `host` does
  // (shape, strides — negative and zero included — and offset).
  static Tensor from_host(const HostTensor &host);
  static Tensor from_vector(const std::vector<double> &values, const Shape &shape, DType dtype = DType::Float32);
  // Counter-based (Philox) generator: same seed, same numbers, on every device.
  static void manual_seed(uint64_t seed);
  static Tensor rand(const Shape &shape, DType dtype = DType::Float32);   // U[0, 1)
  static Tensor randn(const Shape &shape, DType dtype = DType::Float32);  // N(0, 1)

  // ---- properties
  const Shape &shape() const;
  int64_t ndim() const { return static_cast<int64_t>(shape().size()); }
  int64_t numel() const;
  int64_t size(int64_t dim) const;
  DType dtype() const;
  const UOpRef &uop() const { return uop_; }
  std::string str() const;  // "Tensor(shape=(2, 3), dtype=float32)"

  // ---- movement (views; no copies)
  Tensor reshape(const Shape &shape) const;  // one dim may be -1
  Tensor permute(const Dims &order) const;
  Tensor expand(const Shape &shape) const;  // -1 keeps a dim; may prepend dims
  // pad[i] = (before, after) for dim i, both >= 0; padded elements read `value`.
  Tensor pad(const std::vector<std::pair<int64_t, int64_t>> &pad, Scalar value = 0) const;
  // shrink[i] = (begin, end) with 0 <= begin <= end <= size(i).
  Tensor shrink(const std::vector<std::pair<int64_t, int64_t>> &bounds) const;
  Tensor flip(const Dims &dims) const;
  // Python slicing x[start:stop:step] along dim; step may be negative (then start/stop
  // default from the end like Python). nullopt means "omitted".
  Tensor slice(int64_t dim, std::optional<int64_t> start, std::optional<int64_t> stop, int64_t step = 1) const;
  // torch.as_strided over this tensor's storage: the base buffer when this tensor is a
  // plain (unmasked, non-negative-stride) view of one, else over its contiguous value
  // (exactly where torch would have copied). storage_offset defaults to the current one.
  Tensor as_strided(const Shape &size, const std::vector<int64_t> &stride,
                    std::optional<int64_t> storage_offset = std::nullopt) const;
  Tensor transpose(int64_t dim0, int64_t dim1) const;

  // ---- elementwise (broadcasting, torch type promotion)
  Tensor add(const Tensor &o) const;
  Tensor sub(const Tensor &o) const;
  Tensor mul(const Tensor &o) const;
  Tensor div(const Tensor &o) const;  // true division; ints -> float32
  Tensor pow(const Tensor &o) const;
  Tensor maximum(const Tensor &o) const;
  Tensor minimum(const Tensor &o) const;
  Tensor eq(const Tensor &o) const;
  Tensor ne(const Tensor &o) const;
  Tensor lt(const Tensor &o) const;
  Tensor le(const Tensor &o) const;
  Tensor gt(const Tensor &o) const;
  Tensor ge(const Tensor &o) const;
  Tensor logical_and(const Tensor &o) const;
  Tensor logical_or(const Tensor &o) const;
  Tensor logical_not() const;
  // this ? a : b (this is cast to bool)
  Tensor where(const Tensor &a, const Tensor &b) const;
  Tensor add(Scalar o) const;
  Tensor sub(Scalar o) const;
  Tensor mul(Scalar o) const;
  Tensor div(Scalar o) const;
  Tensor pow(Scalar o) const;
  Tensor neg() const;
  Tensor abs() const;
  Tensor exp() const;
  Tensor log() const;
  Tensor sqrt() const;
  Tensor rsqrt() const;
  Tensor sin() const;
  Tensor cos() const;
  Tensor tanh() const;
  Tensor sigmoid() const;
  Tensor relu() const;
  Tensor erf() const;
  Tensor gelu(const std::string &approximate = "none") const;  // "none" (erf) or "tanh"
  Tensor cast(DType dtype) const;

  // ---- reductions; empty dims = all dims
  Tensor sum(const Dims &dims = {}, bool keepdim = false) const;   // ints/bool -> int64
  Tensor prod(const Dims &dims = {}, bool keepdim = false) const;  // ints/bool -> int64
  Tensor mean(const Dims &dims = {}, bool keepdim = false) const;  // floating only
  Tensor amax(const Dims &dims = {}, bool keepdim = false) const;
  Tensor amin(const Dims &dims = {}, bool keepdim = false) const;
  Tensor max() const;  // full reduction, like torch.max(x)
  Tensor min() const;
  // First index of the max/min (int64); no dim = over the flattened tensor.
  Tensor argmax(std::optional<int64_t> dim = std::nullopt, bool keepdim = false) const;
  Tensor argmin(std::optional<int64_t> dim = std::nullopt, bool keepdim = false) const;

  // ---- realization
  Tensor contiguous() const;
  Tensor &realize();
  HostTensor to_host() const;  // realizes; row-major result
  double item() const;

 private:
  UOpRef uop_;
};

Tensor operator+(const Tensor &a, const Tensor &b);
Tensor operator-(const Tensor &a, const Tensor &b);
Tensor operator*(const Tensor &a, const Tensor &b);
Tensor operator/(const Tensor &a, const Tensor &b);
Tensor operator-(const Tensor &a);
Tensor operator+(const Tensor &a, Scalar b);
Tensor operator-(const Tensor &a, Scalar b);
Tensor operator*(const Tensor &a, Scalar b);
Tensor operator/(const Tensor &a, Scalar b);

// Statistics the tests read: kernels run and buffers allocated since reset.
struct RunStats {
  int64_t kernels_run = 0;
  int64_t buffers_allocated = 0;  // device buffers created by realize (outputs and intermediates)
  int64_t kernels_compiled = 0;   // cache misses that invoked the C compiler
};
RunStats run_stats();
void reset_run_stats();

}  // namespace loom
