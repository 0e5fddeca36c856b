#include "codegen/block.h"

#include <algorithm>
#include <numeric>
#include <unordered_map>

#include "uop/graph.h"

namespace loom::codegen {

using shape::ShapeTracker;
using uop::Op;
using uop::UOp;
using uop::UOpRef;

namespace {

// The reduction a kernel stores: its value, or a contiguous view of it.
UOpRef stored_reduction(const UOpRef &value) {
  const UOpRef &v = value->op == Op::View && value->arg_as<ShapeTracker>().contiguous() ? value->src[0] : value;
  return v->op == Op::ReduceAxis ? v : nullptr;
}

// Views of buffers or constants, ALU and casts only; some view does not read
// the innermost axis (it has stride 0 there).
bool plain_with_reuse(const UOpRef &x, size_t inner) {
  bool reuse = false;
  for (auto &u : uop::toposort(x)) {
    if (uop::is_kernel_leaf(u->op)) continue;
    if (u->op == Op::View) {
      const UOp *src = u->src[0].get();
      if (!uop::is_kernel_leaf(src->op)) return false;
      const shape::View &v = u->arg_as<ShapeTracker>().views.back();
      reuse = reuse || (v.strides[inner] == 0 && !v.mask);
      continue;
    }
    if (!uop::is_alu(u->op) && u->op != Op::Cast) return false;
  }
  return reuse;
}

// `st` (of shape s) with its last axis split into [n / kBlockColumns,
// kBlockColumns] and the block axis moved outermost.
ShapeTracker blocked(const ShapeTracker &st, const Shape &s) {
  Shape split(s.begin(), s.end() - 1);
  split.push_back(s.back() / kBlockColumns);
  split.push_back(kBlockColumns);
  std::vector<int64_t> perm(split.size());
  std::iota(perm.begin(), perm.end(), int64_t{-1});
  perm[0] = static_cast<int64_t>(s.size()) - 1;
  perm.back() = static_cast<int64_t>(s.size());
  return st.reshape(split).permute(perm);
}

}  // namespace

UOpRef block_columns(const UOpRef &ast) {
  if (ast->src.size() != 1) return ast;
  const UOpRef &store = ast->src[0];
  const auto *out = std::get_if<ShapeTracker>(&store->arg);
  if (!out || !out->contiguous() || store->src[0]->dtype != DType::Float32) return ast;
  const UOpRef r = stored_reduction(store->src[1]);
  if (!r || r->dtype != DType::Float32 || r->arg_as<uop::ReduceArg>().op != Op::Add) return ast;
  const UOpRef &x = r->src[0];
  const Shape &s = uop::shape_of(x);
  const std::vector<int64_t> &axes = r->arg_as<uop::ReduceArg>().axes;
  if (s.empty()) return ast;
  const size_t inner = s.size() - 1;
  if (std::find(axes.begin(), axes.end(), static_cast<int64_t>(inner)) != axes.end()) return ast;
  int64_t reduced = 1;
  for (int64_t a : axes) reduced *= s[static_cast<size_t>(a)];
  const int64_t n = s[inner];
  if (n < 2 * kBlockColumns || n % kBlockColumns != 0 || reduced < kBlockMinReduce ||
      reduced * n * 4 < kBlockMinPanel || !plain_with_reuse(x, inner))
    return ast;

  std::unordered_map<const UOp *, UOpRef> memo;
  const UOpRef blocked_x = uop::replace_nodes(
      x,
      [&](const UOpRef &u) -> UOpRef {
        return u->op == Op::View ? UOp::make(Op::View, u->dtype, {u->src[0]}, blocked(u->arg_as<ShapeTracker>(), s))
                                 : nullptr;
      },
      memo);
  std::vector<int64_t> moved;  // a reduced axis a (inner to it) moves to a + 1
  for (int64_t a : axes) moved.push_back(a + 1);
  const UOpRef sum = UOp::make(Op::ReduceAxis, DType::Float32, {blocked_x}, uop::ReduceArg{Op::Add, moved});
  // The store walks the loops' order and writes each element where the
  // row-major output has it.
  const Shape &rs = uop::shape_of(r);
  const ShapeTracker st = blocked(ShapeTracker::from_shape(rs), rs);
  return UOp::make(Op::Sink, DType::Bool, {UOp::make(Op::Store, DType::Bool, {store->src[0], sum}, st)});
}

}  // namespace loom::codegen
