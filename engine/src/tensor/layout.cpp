// The memory layout of an elementwise result, as torch's TensorIterator
// chooses it (DESIGN 15): the order that sorts the operands' strides, so a
// result of permuted (channels_last, transposed) operands is laid out as they
// are. The result node is built in that order and viewed back, so its
// storage really is laid out that way (strides() reports it) and its kernel
// walks the operands in their own order.
#include <algorithm>
#include <span>

#include "tensor/ops_util.h"

namespace loom::tensor {

namespace {

using Strides = std::vector<int64_t>;

// An operand's strides as TensorIterator sees them: a plain view's own
// (0 where broadcast); none (nullptr) for a row-major value (a computed node,
// or a view torch would have copied: a pad, a flip, a reshape that moves).
// A type conversion inside the op (type promotion) is no operand of its own:
// its source's strides are the operand's, as TensorIterator converts on load.
const Strides *operand_strides(const UOpRef &operand) {
  const uop::UOp *u = operand.get();
  while (u->op == uop::Op::Cast) u = u->src[0].get();
  if (u->op != uop::Op::View) return nullptr;
  const shape::ShapeTracker &st = u->arg_as<shape::ShapeTracker>();
  if (!st.single_plain()) return nullptr;
  const Strides &s = st.views[0].strides;
  return std::any_of(s.begin(), s.end(), [](int64_t v) { return v < 0; }) ? nullptr : &s;
}

bool is_elementwise(uop::Op op) { return uop::is_alu(op) || op == uop::Op::Cast; }

// torch's contiguous strides for `shape` (TensorIterator's fast path: all
// operands contiguous, the result too), checked without allocating.
bool contiguous(const Strides &s, const Shape &shape) {
  int64_t want = 1;
  for (size_t d = s.size(); d-- > 0;) {
    if (s[d] != want) return false;
    want *= std::max<int64_t>(shape[d], 1);
  }
  return true;
}

// The strides an operand has once converted to the op's dtype (torch's
// .to(): its own when non-overlapping and dense, else dense in the order
// that sorts them, infer_dense_strides).
Strides converted(const Strides &s, const Shape &shape) {
  if (non_overlapping_and_dense(s, shape)) return s;
  const std::vector<int64_t> order = iterator_order({s}, shape);
  Strides r(s.size());
  int64_t next = 1;
  for (size_t i = order.size(); i-- > 0;) {
    r[static_cast<size_t>(order[i])] = next;
    next *= shape[static_cast<size_t>(order[i])];
  }
  return r;
}

// An operand's strides over the result's dims, as TensorIterator aligns them:
// 0 for the dims it lacks or broadcasts, its own for the rest. A CAST is an
// input torch converts to the op's dtype before it iterates.
Strides aligned(const UOpRef &operand, const Shape &out) {
  const Shape &own = uop::shape_of(operand);
  const Strides *st = operand_strides(operand);
  Strides made;  // when the operand's own strides are not its view's
  if (!st) made = shape::contiguous_strides(own);
  else if (operand->op == uop::Op::Cast) made = converted(*st, own);
  const Strides &own_strides = !st || operand->op == uop::Op::Cast ? made : *st;
  Strides r(out.size(), 0);
  const size_t lead = out.size() - own.size();
  for (size_t d = 0; d < own.size(); d++)
    if (own[d] != 1 || out[lead + d] == 1) r[lead + d] = own_strides[d];
  return r;
}

// Whether an operand (a plain view, read without conversion) leaves every
// pair of the result's dims where TensorIterator's sort starts them, in
// row-major order: over the dims it does not broadcast, each inner dim's
// stride is below each outer one's (or equal, the inner no larger, as the
// sort breaks ties). Operands that all do make the sort move nothing, so the
// result is row-major: broadcasts of row-major tensors ((1, C, 1, 1) against
// (N, C, H, W): BatchNorm's statistics, a bias) take this path without the
// sort's lists.
bool keeps_row_major(const UOpRef &operand, const Strides &st, const Shape &out) {
  const Shape &own = uop::shape_of(operand);
  const size_t lead = out.size() - own.size();
  auto stride = [&](size_t d) -> int64_t {  // as aligned() has it
    if (d < lead) return 0;
    const size_t k = d - lead;
    return own[k] != 1 || out[d] == 1 ? st[k] : 0;
  };
  for (size_t inner = 1; inner < out.size(); inner++) {
    const int64_t si = stride(inner);
    if (si == 0) continue;
    for (size_t outer = 0; outer < inner; outer++) {
      const int64_t so = stride(outer);
      if (so != 0 && (si > so || (si == so && out[inner] > out[outer]))) return false;
    }
  }
  return true;
}

thread_local int t_row_major_scopes = 0;

}  // namespace

bool non_overlapping_and_dense(const Strides &s, const Shape &shape) {
  if (std::find(shape.begin(), shape.end(), 0) != shape.end()) return true;  // contiguous, as torch has it
  std::vector<size_t> dims;
  for (size_t d = 0; d < shape.size(); d++)
    if (shape[d] > 1) dims.push_back(d);
  std::sort(dims.begin(), dims.end(), [&](size_t a, size_t b) { return s[a] < s[b]; });
  int64_t want = 1;
  for (size_t d : dims) {
    if (s[d] != want) return false;
    want *= shape[d];
  }
  return true;
}

Dims iterator_order(const std::vector<Strides> &ops, const Shape &shape) {
  const int n = static_cast<int>(shape.size());
  std::vector<int64_t> perm(static_cast<size_t>(n));
  for (int i = 0; i < n; i++) perm[static_cast<size_t>(i)] = n - 1 - i;
  auto should_swap = [&](int64_t d0, int64_t d1) {
    for (const Strides &s : ops) {
      const int64_t s0 = s[static_cast<size_t>(d0)], s1 = s[static_cast<size_t>(d1)];
      if (s0 == 0 || s1 == 0) continue;
      if (s0 != s1) return s0 < s1 ? -1 : 1;
      if (shape[static_cast<size_t>(d0)] > shape[static_cast<size_t>(d1)]) return 1;
    }
    return 0;
  };
  for (int i = 1; i < n; i++) {
    int dim1 = i;
    for (int dim0 = i - 1; dim0 >= 0; dim0--) {
      const int c = should_swap(perm[static_cast<size_t>(dim0)], perm[static_cast<size_t>(dim1)]);
      if (c > 0) {
        std::swap(perm[static_cast<size_t>(dim0)], perm[static_cast<size_t>(dim1)]);
        dim1 = dim0;
      } else if (c < 0) {
        break;
      }
    }
  }
  std::reverse(perm.begin(), perm.end());
  return perm;
}

namespace {

// torch's strides for a view of (shape, strides) as `to` (computeStride: dims
// merge or split within chunks whose elements lie evenly spaced; a size-1
// dim takes the stride below it times its chunk's elements so far). Only
// called where the view exists.
Strides view_strides(const Shape &from, const Strides &strides, const Shape &to) {
  Strides out(to.size(), 1);
  if (from.empty()) return out;
  int64_t view_d = static_cast<int64_t>(to.size()) - 1, base = strides.back(), numel = 1, view_numel = 1;
  for (int64_t d = static_cast<int64_t>(from.size()) - 1; d >= 0; d--) {
    numel *= from[static_cast<size_t>(d)];
    if (d > 0 && (from[static_cast<size_t>(d - 1)] == 1 || strides[static_cast<size_t>(d - 1)] == numel * base)) continue;
    while (view_d >= 0 && (view_numel < numel || to[static_cast<size_t>(view_d)] == 1)) {
      out[static_cast<size_t>(view_d)] = view_numel * base;
      view_numel *= to[static_cast<size_t>(view_d)];
      view_d--;
    }
    if (d > 0) {
      base = strides[static_cast<size_t>(d - 1)];
      numel = view_numel = 1;
    }
  }
  return out;
}

// An index's strides over the result's dims: expanded to the batch shape
// (expand_outplace), viewed as (1.., batch.., 1..) (reshape_indexer), 0 where
// the result broadcasts it.
Strides index_operand(const IndexLayout &ix, const std::vector<size_t> &batch, const Shape &result) {
  Shape b;
  for (size_t r : batch) b.push_back(result[r]);
  Strides expanded(b.size(), 0);
  const size_t lead = b.size() - ix.shape.size();
  for (size_t j = 0; j < ix.shape.size(); j++)
    if (ix.shape[j] == b[lead + j]) expanded[lead + j] = ix.strides[j];
  if (ix.shape == b) expanded = ix.strides;
  Shape viewed(result.size(), 1);
  for (size_t k = 0; k < batch.size(); k++) viewed[batch[k]] = b[k];
  Strides s = view_strides(b, expanded, viewed);
  for (size_t r = 0; r < result.size(); r++)
    if (viewed[r] == 1 && result[r] != 1) s[r] = 0;
  return s;
}

}  // namespace

Dims index_result_order(const Tensor &x, const Dims &x_dims, const std::vector<IndexLayout> &indices,
                        const Shape &result) {
  const Strides xs = x.strides();
  std::vector<Strides> ops{Strides(result.size(), 0)};
  std::vector<size_t> batch;
  for (size_t r = 0; r < result.size(); r++) {
    if (x_dims[r] < 0) batch.push_back(r);
    else ops[0][r] = xs[static_cast<size_t>(x_dims[r])];
  }
  for (const IndexLayout &ix : indices) ops.push_back(index_operand(ix, batch, result));
  return iterator_order(ops, result);
}

Dims inverse_permutation(const Dims &perm) {
  Dims inv(perm.size());
  for (size_t i = 0; i < perm.size(); i++) inv[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
  return inv;
}

RowMajorScope::RowMajorScope() { ++t_row_major_scopes; }
bool RowMajorScope::active() { return t_row_major_scopes > 0; }
RowMajorScope::~RowMajorScope() { --t_row_major_scopes; }

bool suggests_channels_last(const Shape &shape, const std::vector<int64_t> &strides) {
  // torch's is_channels_last_strides_2d / _3d: the dims from the fastest.
  static const std::vector<size_t> order_2d{1, 3, 2, 0}, order_3d{1, 4, 3, 2, 0};
  if ((shape.size() != 4 && shape.size() != 5) || strides[1] == 0) return false;
  int64_t min = 0;
  for (const size_t d : shape.size() == 4 ? order_2d : order_3d) {
    if (shape[d] == 0 || strides[d] < min) return false;
    if (d == 0 && min == strides[1]) return false;  // N's stride equal to C's: ambiguous, row-major
    min = strides[d];
    if (shape[d] > 1) min *= shape[d];
  }
  return true;
}

UOpRef in_iterator_layout(UOpRef u, std::initializer_list<UOpRef> torch_operands) {
  if (RowMajorScope::active() || !is_elementwise(u->op) || u->src.empty()) return u;
  const Shape &shape = uop::shape_of(u);
  const std::span<const UOpRef> operands = torch_operands.size() == 0
                                                ? std::span<const UOpRef>(u->src.begin(), u->src.end())
                                                : std::span<const UOpRef>(torch_operands.begin(), torch_operands.end());
  // Computed operands, views that keep row-major order (broadcast scalars,
  // whose strides are all 0, among them; not once converted, which makes
  // them dense) and contiguous views of the result's shape: row-major. (Any
  // other view runs the sort.)
  if (std::all_of(operands.begin(), operands.end(), [&](const UOpRef &s) {
        const Strides *st = operand_strides(s);
        return !st || (s->op != uop::Op::Cast && keeps_row_major(s, *st, shape)) ||
               (uop::shape_of(s) == shape && contiguous(*st, shape));
      }))
    return u;
  std::vector<Strides> ops;
  ops.reserve(operands.size());
  for (const UOpRef &s : operands) ops.push_back(aligned(s, shape));
  const std::vector<int64_t> order = iterator_order(ops, shape);
  // Only dims of more than one element place memory: an order that moves
  // nothing else is row-major.
  int64_t last_big = -1;
  bool row_major = true;
  for (int64_t d : order)
    if (shape[static_cast<size_t>(d)] > 1) {
      row_major &= d > last_big;
      last_big = d;
    }
  if (row_major) return u;
  std::vector<UOpRef> src;
  for (const UOpRef &s : u->src) src.push_back(uop::view(s, uop::tracker_of(s).permute(order)));
  const UOpRef inner = u->with_src(std::move(src));
  return uop::view(inner, uop::tracker_of(inner).permute(inverse_permutation(order)));
}

}  // namespace loom::tensor
