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
#include "loom/stats.h"

namespace loom {
namespace uop {
class UOp;
}
struct TensorImpl;  // engine/src/autograd/impl.h
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
  // Integers uniform in [low, high).
  static Tensor randint(int64_t low, int64_t high, const Shape &shape, DType dtype = DType::Int64);
  static Tensor randperm(int64_t n, DType dtype = DType::Int64);  // a random permutation of 0..n-1
  // In place (through views too), from the same generator.
  Tensor &uniform_(double from = 0, double to = 1);   // floating: U[from, to)
  Tensor &normal_(double mean = 0, double std = 1);   // floating: N(mean, std^2)
  Tensor &random_(int64_t low, int64_t high);         // integers uniform in [low, high)

  // ---- properties
  const Shape &shape() const;
  int64_t ndim() const { return static_cast<int64_t>(shape().size()); }
  int64_t numel() const;
  int64_t size(int64_t dim) const;
  DType dtype() const;
  const UOpRef &uop() const;
  std::string str() const;  // "Tensor(shape=(2, 3), dtype=float32)"
  // The strides and storage offset of the storage as_strided addresses: a
  // plain view's own (negative strides excepted), row-major where torch would
  // have copied. An elementwise result is laid out as torch's TensorIterator
  // lays it out (in the order that sorts its operands' strides: a permuted or
  // channels_last operand's order); other ops' results are row-major.
  std::vector<int64_t> strides() const;
  int64_t storage_offset() const;
  // The base whose row-major value is the storage that strides() and
  // storage_offset() address, when this is a view lying in its base's
  // buffer (else nullopt: the storage is this tensor's own row-major value);
  // with an identity equal for the tensors sharing that storage (torch.save
  // keeps them sharing it).
  std::pair<std::optional<Tensor>, const void *> storage_base() const;

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

  // ---- integer semantics (torch's). floor_divide and remainder also take
  // floating tensors; the bitwise ops and shifts raise a TypeError for them.
  Tensor floor_divide(const Tensor &o) const;  // rounds toward -inf; an integer x // 0 raises
  Tensor remainder(const Tensor &o) const;     // takes the divisor's sign; an integer x % 0 raises
  Tensor fmod(const Tensor &o) const;          // C's fmod: takes the dividend's sign; an integer x % 0 raises
  Tensor bitwise_and(const Tensor &o) const;
  Tensor bitwise_or(const Tensor &o) const;
  Tensor bitwise_xor(const Tensor &o) const;
  Tensor bitwise_not() const;
  Tensor bitwise_left_shift(const Tensor &o) const;   // wraps; counts outside [0, 63] give 0
  Tensor bitwise_right_shift(const Tensor &o) const;  // arithmetic for signed types
  // torch.clamp: min(max(x, min), max); at least one bound. The gradient passes where min <= x <= max.
  Tensor clamp(std::optional<Scalar> min, std::optional<Scalar> max = std::nullopt) const;

  // ---- linear algebra
  // torch.matmul: 1-d operands are promoted and squeezed back, batch dims broadcast.
  // Integer operands give the integer dtype, the sum wrapping as it wraps (no bool).
  Tensor matmul(const Tensor &o) const;

  // ---- reductions; empty dims = all dims
  Tensor sum(const Dims &dims = {}, bool keepdim = false) const;   // ints/bool -> int64
  Tensor prod(const Dims &dims = {}, bool keepdim = false) const;  // ints/bool -> int64
  // Floating only. mean() saves nothing for backward; mean(dims) saves the
  // input, as torch's MeanBackward1 (an empty dims list reduces every dim).
  Tensor mean() const;
  Tensor mean(const Dims &dims, bool keepdim = false) const;
  Tensor amax(const Dims &dims = {}, bool keepdim = false) const;
  Tensor amin(const Dims &dims = {}, bool keepdim = false) const;
  Tensor max() const;  // full reduction, like torch.max(x)
  Tensor min() const;
  // First index of the max/min (int64); no dim = over the flattened tensor.
  Tensor argmax(std::optional<int64_t> dim = std::nullopt, bool keepdim = false) const;
  Tensor argmin(std::optional<int64_t> dim = std::nullopt, bool keepdim = false) const;

  // ---- indexing (index tensors are int64, or int32 where torch accepts it; values are
  // checked against the indexed size after realizing the index, as torch does at run time)
  Tensor gather(int64_t dim, const Tensor &index) const;
  // Out of place: a copy of this with src's elements written where index says.
  Tensor scatter(int64_t dim, const Tensor &index, const Tensor &src) const;
  Tensor scatter_add(int64_t dim, const Tensor &index, const Tensor &src) const;
  Tensor index_select(int64_t dim, const Tensor &index) const;  // index: 1-d or 0-d
  // x[:, ..., index] from dim: an integer index's shape replaces that dim
  // (negative values count from the end); a bool mask covers dims
  // [dim, dim + mask.ndim()), which become one holding the selected elements.
  Tensor index(int64_t dim, const Tensor &index) const;
  // torch's advanced indexing, x[i, :, j]: indices[k] indexes the next dim (a
  // bool mask the next mask.ndim() dims; std::nullopt takes the dim whole).
  // The index tensors broadcast together; their shape replaces the indexed
  // dims where those are adjacent, else comes first.
  Tensor index(const std::vector<std::optional<Tensor>> &indices) const;
  // torch.index_put (out of place): values (this dtype, broadcast to
  // index(indices)'s shape) stored at those places; accumulate adds them,
  // every duplicate included, else the last duplicate wins.
  Tensor index_put(const std::vector<std::optional<Tensor>> &indices, const Tensor &values,
                   bool accumulate = false) const;
  Tensor masked_fill(const Tensor &mask, Scalar value) const;  // mask: bool, broadcasts
  Tensor masked_select(const Tensor &mask) const;  // 1-d; realizes the mask to count
  Tensor one_hot(int64_t num_classes = -1) const;  // int64 input; -1: max + 1

  // ---- shaping
  static Tensor cat(const std::vector<Tensor> &tensors, int64_t dim = 0);
  static Tensor stack(const std::vector<Tensor> &tensors, int64_t dim = 0);
  std::vector<Tensor> split(int64_t split_size, int64_t dim = 0) const;
  std::vector<Tensor> split(const std::vector<int64_t> &split_sizes, int64_t dim = 0) const;
  std::vector<Tensor> chunk(int64_t chunks, int64_t dim = 0) const;
  std::vector<Tensor> unbind(int64_t dim = 0) const;
  Tensor repeat(const std::vector<int64_t> &sizes) const;
  Tensor tile(const std::vector<int64_t> &sizes) const;
  Tensor roll(const std::vector<int64_t> &shifts, const Dims &dims = {}) const;  // no dims: flattened
  Tensor tril(int64_t k = 0) const;
  Tensor triu(int64_t k = 0) const;
  Tensor squeeze(const Dims &dims = {}) const;  // no dims: every size-1 dim
  Tensor unsqueeze(int64_t dim) const;
  Tensor flatten(int64_t start_dim = 0, int64_t end_dim = -1) const;
  Tensor unflatten(int64_t dim, const std::vector<int64_t> &sizes) const;  // one size may be -1
  Tensor unfold(int64_t dim, int64_t size, int64_t step) const;  // windows as a new last dim (a view)
  // torch.nn.functional.pad with mode "reflect" or "replicate"; pad[i] = (before, after)
  // for dim ndim - pad.size() + i (the trailing dims).
  Tensor pad_mode(const std::vector<std::pair<int64_t, int64_t>> &pad, const std::string &mode) const;

  // ---- scans and order
  Tensor cumsum(int64_t dim) const;   // ints/bool -> int64
  Tensor cumprod(int64_t dim) const;  // ints/bool -> int64
  // (values, int64 indices); ties keep their original order.
  std::pair<Tensor, Tensor> sort(int64_t dim = -1, bool descending = false) const;
  Tensor argsort(int64_t dim = -1, bool descending = false) const;
  std::pair<Tensor, Tensor> topk(int64_t k, int64_t dim = -1, bool largest = true, bool sorted = true) const;
  // (values, indices of the first occurrence), like torch.max(x, dim).
  std::pair<Tensor, Tensor> max(int64_t dim, bool keepdim = false) const;
  std::pair<Tensor, Tensor> min(int64_t dim, bool keepdim = false) const;

  // ---- statistics (floating point); correction 1 is Bessel's
  Tensor var(const Dims &dims = {}, int64_t correction = 1, bool keepdim = false) const;
  Tensor std(const Dims &dims = {}, int64_t correction = 1, bool keepdim = false) const;
  std::pair<Tensor, Tensor> std_mean(const Dims &dims = {}, int64_t correction = 1, bool keepdim = false) const;
  Tensor cov(int64_t correction = 1) const;  // 2-d: rows are variables; 1-d: one variable

  // ---- autograd (see loom/autograd.h). Tensor handles share one impl, like
  // torch's: a copy of a Tensor sees its realization, its grad and in-place updates.
  bool requires_grad() const;
  // Marks a leaf as requiring grad; only floating-point leaves can.
  Tensor &requires_grad_(bool on = true);
  bool is_leaf() const;  // no grad_fn: created by the user, or does not require grad
  std::optional<Tensor> grad() const;
  void set_grad(std::optional<Tensor> grad);  // set_grad(std::nullopt) is torch's `x.grad = None`
  std::string grad_fn_name() const;          // "MulBackward"; "" for leaves
  // torch's retain_grad(): a non-leaf's gradient is kept in .grad by backward()
  // (accumulated, as a leaf's); a no-op on a leaf.
  void retain_grad() const;
  bool retains_grad() const;
  // The same value, cut from the graph (shares the version counter, like torch).
  Tensor detach() const;
  // Accumulates d(this)/d(leaf) into every leaf's grad. `gradient` defaults to 1
  // and may be omitted only for one-element outputs. Without retain_graph the
  // graph's nodes free what they saved (see autograd::grad).
  void backward(std::optional<Tensor> gradient = std::nullopt, bool retain_graph = false) const;
  // In-place copy (torch's copy_): `value` is cast and broadcast to this shape.
  // Raises where torch does: on a leaf that requires grad while grad mode is on.
  Tensor &assign(const Tensor &value);
  // torch's checks before an in-place op that reads `operands` writes this
  // tensor (add_, masked_fill_, ...; then assign the new value): an operand
  // sharing its memory partly raises (the same elements with the same strides
  // are fine, as in x.add_(x)), and with grad mode on so do assign's leaf and
  // view rules. Call it before computing the new value: torch checks before
  // the op, and computing it counts as a use of this tensor.
  void check_in_place(const std::vector<Tensor> &operands) const;
  int64_t version() const;  // bumped by every in-place update

  // ---- devices. A process computes on one device, the one LOOM_DEVICE names
  // (CPU by default, or CUDA), and every tensor lives there.
  std::string device() const;  // "cpu" or "cuda", as torch names them
  // This tensor when `device` ("cpu", "cuda", "cuda:0") is where it lives;
  // otherwise raises, naming the device the process runs on and, when the
  // asked one cannot be used here, what is missing.
  Tensor to(const std::string &device) const;

  // ---- realization
  Tensor contiguous() const;
  // The same value in a buffer of its own when realized (tinygrad's
  // contiguous()): a kernel boundary in the lazy graph, nothing runs now. Its
  // gradient is materialized too. A recurrence (an RNN's state) uses it so that
  // step t reads step t-1's buffer instead of recomputing every earlier step.
  Tensor materialize() const;
  Tensor &realize();
  HostTensor to_host() const;  // realizes; row-major result
  double item() const;

 private:
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<TensorImpl> impl_;
  friend struct TensorImpl;
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

// Realizes several tensors in one schedule (shared work is done once).
void realize_all(std::vector<Tensor> &tensors);
}  // namespace loom
