#include "codegen/merge_axes.h"

#include <algorithm>
#include <optional>
#include <unordered_map>

#include "codegen/indexing.h"
#include "codegen/lowerer.h"
#include "uop/graph.h"

namespace loom::codegen {

using uop::Op;
using uop::UOp;
using uop::UOpRef;

namespace {

Shape merged(const Shape &s, size_t a) {
  Shape r(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(a));
  r.push_back(s[a] * s[a + 1]);
  r.insert(r.end(), s.begin() + static_cast<std::ptrdiff_t>(a) + 2, s.end());
  return r;
}

// The tracker read at `to` instead of its own shape, when its top view
// reshapes into one view (no view stack, so no division).
std::optional<shape::ShapeTracker> reshaped(const shape::ShapeTracker &st, const Shape &to) {
  auto v = st.views.back().reshape(to);
  if (!v) return std::nullopt;
  shape::ShapeTracker r = st;
  r.views.back() = *v;
  return r;
}

// One loop variable per axis of the tracker's shape.
std::vector<UOpRef> loop_index(const shape::ShapeTracker &st) {
  std::vector<UOpRef> idx;
  for (size_t d = 0; d < st.shape().size(); d++)
    idx.push_back(UOp::make(Op::Range, DType::Int64, {UOp::const_int(st.shape()[d])}, static_cast<int64_t>(d)));
  return idx;
}

// Divisions and remainders among the expressions.
size_t divisions(const std::vector<UOpRef> &exprs) {
  size_t n = 0;
  for (auto &c : exprs)
    for (auto &x : uop::toposort(c)) n += x->op == Op::IDiv || x->op == Op::Mod;
  return n;
}

bool reads_without_division(const shape::ShapeTracker &st, const Shape &inner) {
  auto [coords, valid] = view_coords(st, loop_index(st), inner);
  coords.push_back(valid);
  return divisions(coords) == 0;
}

// Divisions in a buffer's address and validity through the tracker's views.
size_t address_divisions(const shape::ShapeTracker &st) {
  auto [flat, valid] = view_index(st, loop_index(st));
  return divisions({flat, valid});
}

// The kernel's value with axes a and a+1 merged, at the kernel's shapes: the
// output's and, below a reduction, its input's (both axes reduced there, or
// neither). Null where some view does not merge them or a node is neither
// elementwise nor such a reduction.
class Merger {
 public:
  Merger(const Shape &out, const Shape *in, size_t a) : a_(a) {
    shapes_.push_back({out, merged(out, a)});
    if (in) shapes_.push_back({*in, merged(*in, a)});
  }
  const Shape &to() const { return shapes_[0].second; }

  UOpRef operator()(const UOpRef &u) {
    if (auto it = memo_.find(u.get()); it != memo_.end()) return it->second;
    UOpRef r = rewrite(u);
    memo_[u.get()] = r;
    return r;
  }

 private:
  const Shape *target(const Shape &s) const {
    for (auto &[from, to] : shapes_)
      if (from == s) return &to;
    return nullptr;
  }

  UOpRef rewrite(const UOpRef &u) {
    if (u->op == Op::Const || u->op == Op::DefineVar) return u;
    if (u->op == Op::View) {
      const auto &st = u->arg_as<shape::ShapeTracker>();
      const Shape *to = target(st.shape());
      if (!to) return nullptr;
      const UOpRef &src = u->src[0];
      // A buffer's view stack (a pool's window under a reshape) must not
      // come to divide the merged axis apart again.
      if (uop::is_kernel_leaf(src->op)) {
        auto r = reshaped(st, *to);
        const bool divides = r && st.views.size() > 1 && address_divisions(*r) > address_divisions(st);
        return r && !divides ? UOp::make(Op::View, u->dtype, u->src, *r) : nullptr;
      }
      // A computed value is read at its own shape: an identity view of it
      // passes the merge on to it; another view merges where it still reads
      // the value's coordinates without division (a broadcast does), or
      // where it would once two adjacent axes of the value merge too (a
      // permute's or a broadcast's view of a value reading them as one).
      if (st.contiguous() && uop::shape_of(src) == st.shape()) return (*this)(src);
      auto r = reshaped(st, *to);
      if (!r) return nullptr;
      const Shape &inner = uop::shape_of(src);
      if (reads_without_division(*r, inner)) return UOp::make(Op::View, u->dtype, u->src, *r);
      for (size_t b = inner.size(); b-- > 1;) {
        if (!reads_without_division(*r, merged(inner, b - 1))) continue;
        Merger value(inner, nullptr, b - 1);
        if (UOpRef v = value(src)) return UOp::make(Op::View, u->dtype, {v}, *r);
      }
      return nullptr;
    }
    if (u->op == Op::ReduceAxis) return reduce(u);
    if (!uop::is_alu(u->op) && u->op != Op::Cast) return nullptr;
    std::vector<UOpRef> src;
    for (auto &s : u->src) {
      src.push_back((*this)(s));
      if (!src.back()) return nullptr;
    }
    return u->with_src(std::move(src));
  }

  // A reduction over both merged axes reduces the merged one; over neither,
  // keeps it. Its input must be at the kernel's input shape.
  UOpRef reduce(const UOpRef &u) {
    if (shapes_.size() < 2 || uop::shape_of(u->src[0]) != shapes_[1].first) return nullptr;
    uop::ReduceArg ra = u->arg_as<uop::ReduceArg>();
    const auto has = [&](size_t d) { return std::count(ra.axes.begin(), ra.axes.end(), static_cast<int64_t>(d)) > 0; };
    if (has(a_) != has(a_ + 1)) return nullptr;
    std::vector<int64_t> axes;
    for (int64_t x : ra.axes)
      if (x != static_cast<int64_t>(a_) + 1) axes.push_back(x > static_cast<int64_t>(a_) ? x - 1 : x);
    ra.axes = axes;
    UOpRef src = (*this)(u->src[0]);
    return src ? UOp::make(Op::ReduceAxis, u->dtype, {src}, ra) : nullptr;
  }

  size_t a_;
  std::vector<std::pair<Shape, Shape>> shapes_;
  std::unordered_map<const UOp *, UOpRef> memo_;
};

// The input shape of the kernel's reductions, when they all share one and no
// reduction reads another; nullopt for none. `ok` goes false for kernels the
// pass leaves alone.
std::optional<Shape> reduce_input(const UOpRef &value, bool &ok) {
  for (auto &x : uop::toposort(value))
    if (x->op == Op::Scan || x->op == Op::Sort || x->op == Op::Gather) ok = false;
  const Reductions r = reductions(value, false);
  ok = ok && r.one_input;
  return r.last ? std::optional<Shape>(uop::shape_of(r.last->src[0])) : std::nullopt;
}

}  // namespace

UOpRef merge_axes(const UOpRef &ast) {
  if (ast->op != Op::Sink || ast->src.size() != 1) return ast;
  UOpRef store = ast->src[0];
  if (store->op != Op::Store || !std::holds_alternative<shape::ShapeTracker>(store->arg)) return ast;
  bool ok = true;
  std::optional<Shape> in = reduce_input(store->src[1], ok);
  // Reductions keep their axes (size 1): an output of another rank is a view of them.
  if (!ok || (in && in->size() != store->arg_as<shape::ShapeTracker>().shape().size())) return ast;
  for (size_t a = store->arg_as<shape::ShapeTracker>().shape().size(); a-- > 1;) {
    const auto &st = store->arg_as<shape::ShapeTracker>();
    if (a + 1 >= st.shape().size()) continue;
    // In a reduction kernel only reduced axes merge: output axes keep the
    // tiles the optimize pass chooses over them.
    if (in && !(st.shape()[a] == 1 && st.shape()[a + 1] == 1 && (*in)[a] > 1 && (*in)[a + 1] > 1)) continue;
    Merger m(st.shape(), in ? &*in : nullptr, a);
    auto out = reshaped(st, m.to());
    if (!out) continue;
    UOpRef value = m(store->src[1]);
    if (!value) continue;
    store = UOp::make(Op::Store, store->dtype, {store->src[0], value}, *out);
    if (in) in = merged(*in, a);
  }
  return store == ast->src[0] ? ast : UOp::make(Op::Sink, ast->dtype, {store});
}

}  // namespace loom::codegen
