#include "uop/graph.h"

#include <mutex>
#include <unordered_map>

#include "loom/error.h"

namespace loom::uop {

namespace {
// Shapes by node. Entries of dead nodes are swept whenever the map has grown
// past twice its live size at the last sweep: amortized O(1), and dead
// entries never outnumber live ones by much (memory stays flat in a loop).
struct ShapeCache {
  std::mutex mu;
  std::unordered_map<const UOp *, std::pair<std::weak_ptr<const UOp>, Shape>> map;
  size_t sweep_at = 4096;
};
ShapeCache &shape_cache() {
  static auto *c = new ShapeCache();
  return *c;
}

Shape compute_shape(const UOpRef &u) {
  switch (u->op) {
    case Op::Buffer: return {u->arg_as<uop::BufferArg>().buffer->size};
    case Op::Const: return {};
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
}  // namespace

const Shape &shape_of(const UOpRef &u) {
  auto &c = shape_cache();
  {
    std::lock_guard<std::mutex> l(c.mu);
    auto it = c.map.find(u.get());
    if (it != c.map.end() && it->second.first.lock() == u) return it->second.second;
  }
  // Walk elementwise chains iteratively so deep graphs don't recurse deeply.
  std::vector<UOpRef> chain;
  UOpRef cur = u;
  while (uop::is_alu(cur->op) || cur->op == Op::Cast || cur->op == Op::Contiguous) {
    chain.push_back(cur);
    cur = cur->src.back();
  }
  Shape s = compute_shape(cur);
  std::lock_guard<std::mutex> l(c.mu);
  if (c.map.size() > c.sweep_at) {
    for (auto it = c.map.begin(); it != c.map.end();) it = it->second.first.expired() ? c.map.erase(it) : std::next(it);
    c.sweep_at = 2 * c.map.size() + 4096;
  }
  c.map[cur.get()] = {cur, s};
  for (auto &n : chain) c.map[n.get()] = {n, s};
  return c.map[u.get()].second;
}

const UOpRef &base_of(const UOpRef &u) { return u->op == Op::View ? u->src[0] : u; }

const UOpRef &root_of(const UOpRef &u) {
  const UOpRef *r = &u;
  while ((*r)->op == Op::View) r = &(*r)->src[0];
  return *r;
}

UOpRef copy_point(const UOpRef &u) {
  if (u->op != Op::View) return u;  // already a fresh value
  return UOp::make(Op::View, u->dtype, {u}, shape::ShapeTracker::from_shape(shape_of(u)));
}

shape::ShapeTracker tracker_of(const UOpRef &u) {
  if (u->op == Op::View) return u->arg_as<shape::ShapeTracker>();
  return shape::ShapeTracker::from_shape(shape_of(u));
}

UOpRef view(const UOpRef &x, const shape::ShapeTracker &st) {
  const UOpRef &base = base_of(x);
  // An identity view over the base is the base itself, unless the base is a
  // copy point (itself a VIEW), whose marker must survive.
  if (st.contiguous() && st.shape() == shape_of(base) && base->op != Op::View) return base;
  return UOp::make(Op::View, base->dtype, {base}, st);
}

const UOp *whole_buffer(const UOp *u) {
  if (u->op == Op::Buffer) return u;
  if (u->op != Op::View || u->src[0]->op != Op::Buffer) return nullptr;
  const auto &st = u->arg_as<shape::ShapeTracker>();
  return st.contiguous() && shape::prod(st.shape()) == u->src[0]->arg_as<BufferArg>().buffer->size ? u->src[0].get()
                                                                                                    : nullptr;
}

UOpRef const_tensor(double value, DType dtype, const Shape &shape) {
  UOpRef c = UOp::const_(dtype, value);
  Shape ones(shape.size(), 1);
  auto st = shape::ShapeTracker::from_shape({}).reshape(ones).expand(shape);
  return UOp::make(Op::View, dtype, {c}, st);
}

UOpRef buffer_view(const std::shared_ptr<uop::Buffer> &buf, const Shape &shape) {
  UOpRef b = UOp::make(Op::Buffer, buf->dtype, {}, uop::BufferArg{buf});
  return view(b, shape::ShapeTracker::from_shape({buf->size}).reshape(shape));
}

}  // namespace loom::uop
