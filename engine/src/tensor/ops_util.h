// Internal helpers for the Tensor op files.
#pragma once
#include <functional>
#include <initializer_list>

#include "loom/tensor.h"
#include "shape/pool_function.h"
#include "tensor/graph.h"

namespace loom::tensor {

Shape broadcast_shapes(const Shape &a, const Shape &b, const char *op);
// "[2, 3]": torch's spelling of a size list in its messages.
std::string list_str(const std::vector<int64_t> &v);
// t's node broadcast to `out` (t's shape with leading dims added and size-1
// dims expanded, already checked): its view, with no handle, view record or
// gradient node (Tensor::expand's forward; an elementwise op's operands).
UOpRef broadcast_to(const Tensor &t, const Shape &out);
// The two operands broadcast to a common shape (torch rules), as graph nodes.
std::pair<UOpRef, UOpRef> broadcast_pair(const Tensor &a, const Tensor &b, const char *op);
// torch.result_type for two tensors (0-d tensors only lift the category).
DType result_type(const Tensor &a, const Tensor &b);
UOpRef cast_to(const UOpRef &u, DType dt);
// A dtype check that throws like torch: `op: "kernel" not implemented for 'Bool'` style.
[[noreturn]] void unsupported_dtype(const char *op, DType dt);
Tensor scalar_tensor(Scalar s, DType dt);
// A tensor of u's value; an elementwise node (ALU, CAST) is first laid out as
// TensorIterator lays out torch's result (in_iterator_layout).
Tensor make_tensor(UOpRef u);
// u (an elementwise node over operands broadcast to its shape) itself when
// torch would lay its result out row-major; else u computed in the order that
// sorts the operands' strides and viewed back (tensor/layout.cpp).
// `operands`: torch's operands before broadcasting, in its order, each a
// CAST where torch converts it to the op's dtype first (u's sources when empty).
UOpRef in_iterator_layout(UOpRef u, std::initializer_list<UOpRef> operands = {});
// torch's suggest_memory_format() is channels_last (4-d) or channels_last_3d
// (5-d) for a tensor of this shape and these strides (Tensor::strides()): its
// dims ordered by stride as that format orders them.
bool suggests_channels_last(const Shape &shape, const std::vector<int64_t> &strides);
// While one lives on this thread, in_iterator_layout leaves every node as it
// is (row-major): the nodes of a composite that torch computes as one op,
// which its caller then lays out once from the op's own operands, or leaves
// row-major where torch's kernel writes a row-major result.
struct RowMajorScope {
  RowMajorScope();
  ~RowMajorScope();
  static bool active();  // on this thread
  RowMajorScope(const RowMajorScope &) = delete;
  RowMajorScope &operator=(const RowMajorScope &) = delete;
};
// TensorIterator's reorder_dimensions over operands' strides (each over
// `shape`'s dims, 0 where broadcast): an insertion sort of the dims, fastest
// first, by the first operand whose strides of the two dims are both nonzero
// and differ (equal strides: the smaller dim goes first); stride-0 dims
// compare as ambiguous and keep their place. Returns the dims outermost
// first. Over one tensor's strides it is torch's infer_dense_strides order:
// how a dense tensor made "like" it is laid out.
Dims iterator_order(const std::vector<std::vector<int64_t>> &ops, const Shape &shape);
// An index tensor's shape and strides as torch holds it (a mask's
// coordinates: one column of nonzero()'s (n, mask dims) result).
struct IndexLayout {
  Shape shape;
  std::vector<int64_t> strides;
};
// The dim order of torch's advanced-indexing result (its AdvancedIndex's
// TensorIterator): the order of `result`'s dims that sorts x's strides
// (`x_dims`: the dim of x each result dim is, -1 in the batch dims the
// indices give) and then the indices' (expanded to the batch shape, viewed
// with the result's other dims as size-1 dims, broadcast).
Dims index_result_order(const Tensor &x, const Dims &x_dims, const std::vector<IndexLayout> &indices,
                        const Shape &result);
// The permutation that undoes `perm`: t.permute(perm).permute(inverse_permutation(perm)) is t.
Dims inverse_permutation(const Dims &perm);
// The dims 0, 1, ..., ndim - 1: the order of a row-major layout.
Dims row_major_order(int64_t ndim);
// The dim order (outermost first) of torch's clone() of t: t's stride order
// where t is one plain view, else row-major.
Dims clone_order(const Tensor &t);
// value's value as a node of its own (no autograd record), stored in the dim
// order `order` (outermost first) and viewed back.
Tensor copy_with_layout(const Tensor &value, const Dims &order);
// r's strides() are dense in the dim order `order` (outermost first) over
// its dims of more than one element.
bool strides_in_order(const Tensor &r, const Dims &order);
// A value to store in that order: r itself where strides_in_order (a view
// too), else copy_with_layout (no autograd record).
Tensor stored_as(const Tensor &r, const Dims &order);
// r stored in the dim order `order`: r itself where it is a tensor of its own
// already laid out so, else a copy laid out so, with an identity node `name`.
Tensor laid_out(const Tensor &r, const Dims &order, const char *name);
// torch's is_non_overlapping_and_dense: no elements, or the dims of more
// than one element, sorted by stride, each stride the product of the sizes
// below it.
bool non_overlapping_and_dense(const std::vector<int64_t> &strides, const Shape &shape);
// u's value as a node the scheduler stores row-major on its own: u itself when
// it is a whole buffer or a CONTIGUOUS node, halves widened to float32 as the
// widening of their row-major node, else a new CONTIGUOUS node. (Not torch's
// contiguous(): that returns any contiguous view itself.)
UOpRef row_major(const UOpRef &u);
// Where each element of a view lands in its base's row-major storage: the
// view's replay (its movement ops from the base) over a base of that shape.
shape::ShapeTracker storage_view(const Shape &base_shape, DType dt,
                                 const shape::PoolFunction<Tensor(const Tensor &)> &replay);
// Raises loom::Error naming `op` when `count` objects of `bytes_each` bytes
// cannot fit in this machine's memory.
void check_fits_in_memory(uint64_t count, size_t bytes_each, const char *op);
// n zeros for a host-built constant (arange, pooling matrices); a count too
// large to allocate raises loom::Error naming `op`.
std::vector<double> host_values(int64_t n, const char *op);
// result[p] = x[p with p[axis] = index[p]]: x and the index (cast to int64)
// have the same rank and agree on every dim but axis; values are not checked
// (an index out of range reads 0). No gradient of its own (callers record one).
Tensor gather_along(const Tensor &x, int64_t axis, const Tensor &index);
// Tensor::mean's value, with no saved input (for composites whose own node
// decides what is saved).
Tensor mean_of(const Tensor &x, const Dims &dims, bool keepdim);
// a * b + c rounded once (C's fma), broadcast, in the operands' floating
// dtype: torch's CPU kernels' vectorized fmadd (batch_norm's x * alpha + beta).
// Differentiable.
Tensor mul_add(const Tensor &a, const Tensor &b, const Tensor &c);

}  // namespace loom::tensor
