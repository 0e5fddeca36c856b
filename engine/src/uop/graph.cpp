#include "uop/graph.h"

#include <algorithm>
#include <unordered_map>

#include "loom/error.h"

namespace loom::uop {

namespace {
Shape compute_shape(const UOpRef &u) {
  switch (u->op) {
    case Op::Buffer: return {u->arg_as<uop::BufferArg>().buffer->size};
    case Op::Const: case Op::DefineVar: return {};
    case Op::View: return u->arg_as<shape::ShapeTracker>().shape();
    case Op::ReduceAxis: {
      Shape s = shape_of(u->src[0]);
      for (auto a : u->arg_as<uop::ReduceArg>().axes) s[a] = 1;
      return s;
    }
    case Op::Gather: return shape_of(u->src[1]);
    case Op::Write: case Op::Scan: case Op::Sort: return shape_of(u->src[0]);
    case Op::Sink: return {};
    default:
      LOOM_CHECK(!u->src.empty(), std::string("no shape for ") + uop::op_name(u->op));
      return shape_of(u->src.back());  // Where: src[0] is the condition; all agree anyway
  }
}
// A 0-d node's shape, constant-initialized: reading it needs no guard.
constinit const Shape kNoDims;

}  // namespace

// Memoized on the node itself: immutable nodes have one shape for life. A
// VIEW's shape is its tracker's (no copy). An elementwise chain shares the
// shape of the node it runs down to (which each node of the chain keeps alive):
// one Shape per computed shape, not one per node.
const Shape &shape_of(const UOpRef &u) {
  // A WRITE, SCAN or SORT has its first source's shape: no copy to memoize.
  if (u->op == Op::Write || u->op == Op::Scan || u->op == Op::Sort) {
    const UOpRef *cur = &u;
    while ((*cur)->op == Op::Write || (*cur)->op == Op::Scan || (*cur)->op == Op::Sort) cur = &(*cur)->src[0];
    return shape_of(*cur);
  }
  if (u->op == Op::View) return u->arg_as<shape::ShapeTracker>().shape();
  if (u->op == Op::Const || u->op == Op::DefineVar || u->op == Op::Sink) return kNoDims;
  if (const Shape *s = u->shape_memo.load(std::memory_order_acquire)) return *s;
  // Walk elementwise chains iteratively so deep graphs don't recurse deeply.
  // Most chains are a node or two: their first nodes are kept on the stack.
  constexpr size_t kNear = 8;
  const UOp *near[kNear];
  std::vector<const UOp *> far;
  size_t chain = 0;
  const UOpRef *cur = &u;
  while ((uop::is_alu((*cur)->op) || (*cur)->op == Op::Cast || (*cur)->op == Op::Contiguous) &&
         !(*cur)->shape_memo.load(std::memory_order_acquire)) {
    if (chain < kNear) near[chain] = cur->get();
    else far.push_back(cur->get());
    chain++;
    cur = &(*cur)->src.back();
  }
  const bool unmemoized = (*cur)->op == Op::View || (*cur)->op == Op::Const || (*cur)->op == Op::DefineVar;
  const Shape *known = unmemoized ? &shape_of(*cur) : (*cur)->shape_memo.load(std::memory_order_acquire);
  if (!known) {  // `cur` owns its computed shape
    auto *fresh = shape::pool_new<Shape>(compute_shape(*cur));
    const Shape *expected = nullptr;
    if ((*cur)->shape_memo.compare_exchange_strong(expected, fresh, std::memory_order_acq_rel)) (*cur)->owns_shape = true;
    else shape::pool_delete(fresh);
    known = (*cur)->shape_memo.load(std::memory_order_acquire);
  }
  for (size_t i = 0; i < chain; i++) {
    const UOp *n = i < kNear ? near[i] : far[i - kNear];
    const Shape *expected = nullptr;
    n->shape_memo.compare_exchange_strong(expected, known, std::memory_order_acq_rel);
  }
  return *u->shape_memo.load(std::memory_order_acquire);
}

const UOpRef &base_of(const UOpRef &u) { return u->op == Op::View ? u->src[0] : u; }

const UOpRef &root_of(const UOpRef &u) {
  const UOpRef *r = &u;
  while ((*r)->op == Op::View) r = &(*r)->src[0];
  return *r;
}

UOpRef copy_point(const UOpRef &u) {
  // Any other node is a fresh value already; a BUFFER is not (it is the
  // input's storage itself: the copy must not see the input's later writes).
  if (u->op != Op::View && u->op != Op::Buffer) return u;
  return UOp::make(Op::View, u->dtype, {u}, shape::ShapeTracker::from_shape(shape_of(u)));
}

const shape::ShapeTracker &tracker_of(const UOpRef &u) {
  if (u->op == Op::View) return u->arg_as<shape::ShapeTracker>();
  if (const auto *t = u->tracker_memo.load(std::memory_order_acquire)) return *t;
  auto *fresh = shape::pool_new<shape::ShapeTracker>(shape::ShapeTracker::from_shape(shape_of(u)));
  const shape::ShapeTracker *expected = nullptr;
  if (!u->tracker_memo.compare_exchange_strong(expected, fresh, std::memory_order_acq_rel)) shape::pool_delete(fresh);
  return *u->tracker_memo.load(std::memory_order_acquire);
}

UOpRef view(const UOpRef &x, shape::ShapeTracker st) {
  const UOpRef &base = base_of(x);
  // An identity view over the base is the base itself, unless the base is a
  // copy point (itself a VIEW), whose marker must survive.
  if (st.contiguous() && st.shape() == shape_of(base) && base->op != Op::View) return base;
  return UOp::make_ref(Op::View, base->dtype, {&base}, std::move(st));
}

const UOp *whole_buffer(const UOp *u) {
  if (u->op == Op::Buffer) return u;
  if (u->op != Op::View || u->src[0]->op != Op::Buffer) return nullptr;
  const auto &st = u->arg_as<shape::ShapeTracker>();
  return st.contiguous() && shape::prod(st.shape()) == u->src[0]->arg_as<BufferArg>().buffer->size ? u->src[0].get()
                                                                                                    : nullptr;
}

namespace {
struct ShapeHash {
  size_t operator()(const Shape &s) const {
    size_t h = s.size();
    for (int64_t d : s) h = (h ^ static_cast<size_t>(d)) * 0x100000001b3ull;
    return h;
  }
};

// The all-zero-stride tracker of `shape`. A training step broadcasts its
// scalars (and the zeros autograd keeps) to a few dozen shapes over and
// over: the trackers are kept per thread by shape, and shared (copying one
// copies a reference). The reference lasts until the thread's next call.
const shape::ShapeTracker &broadcast_tracker(const Shape &shape) {
  constexpr size_t kKept = 256;  // past it, the table starts again
  thread_local std::unordered_map<Shape, shape::ShapeTracker, ShapeHash> kept;
  if (auto it = kept.find(shape); it != kept.end()) return it->second;
  if (kept.size() >= kKept) kept.clear();
  shape::ShapeTracker st{shape::ViewStack(shape::View::create(shape, shape::Strides(shape.size(), 0)))};
  return kept.emplace(shape, std::move(st)).first->second;
}

// The 0-d constant reshaped to ones and expanded to `shape`: every stride 0,
// built as one view.
UOpRef broadcast_const(UOpRef c, DType dtype, const Shape &shape) {
  return UOp::make_ref(Op::View, dtype, {&c}, broadcast_tracker(shape));
}
}  // namespace

UOpRef replace_nodes(const UOpRef &u, const std::function<UOpRef(const UOpRef &)> &leaf,
                     std::unordered_map<const UOp *, UOpRef> &memo) {
  if (auto it = memo.find(u.get()); it != memo.end()) return it->second;
  UOpRef r = leaf(u);
  if (!r) {
    std::vector<UOpRef> src;
    for (auto &s : u->src) src.push_back(replace_nodes(s, leaf, memo));
    r = src == u->src ? u : u->with_src(std::move(src));
  }
  memo[u.get()] = r;
  return r;
}

UOpRef const_tensor(double value, DType dtype, const Shape &shape) {
  return broadcast_const(UOp::const_(dtype, value), dtype, shape);
}

UOpRef scalar_tensor(double value, DType dtype, const Shape &shape) {
  if (value == 0 || value == 1 || value == -1 || dtype == DType::Bool) return const_tensor(value, dtype, shape);
  return param_tensor(value, dtype, shape);
}

UOpRef param_tensor(double value, DType dtype, const Shape &shape, int64_t tag) {
  return broadcast_const(UOp::param(dtype, value, tag), dtype, shape);
}

UOpRef const_int_tensor(int64_t value, DType dtype, const Shape &shape) {
  return broadcast_const(UOp::const_int(value, dtype), dtype, shape);
}

bool is_buffer_view(const UOpRef &u, const Buffer &buf, const Shape &shape) {
  const bool flat = shape.size() == 1 && shape[0] == buf.size;  // buffer_view gives the BUFFER itself
  if (u->op == Op::Buffer) return flat && u->arg_as<BufferArg>().buffer.get() == &buf;
  if (flat || u->op != Op::View || u->src[0]->op != Op::Buffer || u->src[0]->arg_as<BufferArg>().buffer.get() != &buf)
    return false;
  const auto &views = u->arg_as<shape::ShapeTracker>().views;
  if (views.size() != 1 || views[0].shape != shape || views[0].offset != 0 || views[0].mask) return false;
  // Row-major strides on every dim, size-1 dims included (ShapeTracker::from_shape's).
  uint64_t want = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    if (views[0].strides[d] != static_cast<int64_t>(want)) return false;
    want *= static_cast<uint64_t>(std::max<int64_t>(shape[d], 1));
  }
  return true;
}

UOpRef buffer_view(const std::shared_ptr<uop::Buffer> &buf, const Shape &shape) {
  return buffer_view(buf, shape::ShapeTracker::from_shape(shape));
}

UOpRef buffer_view(const std::shared_ptr<uop::Buffer> &buf, const shape::ShapeTracker &row_major) {
  LOOM_CHECK(row_major.numel() == buf->size, "buffer_view: shape does not cover the buffer");
  UOpRef b = UOp::make(Op::Buffer, buf->dtype, {}, uop::BufferArg{buf});
  return view(b, row_major);
}

}  // namespace loom::uop
