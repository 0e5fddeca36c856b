#include "codegen/merge_axes.h"

#include <optional>
#include <unordered_map>

#include "codegen/indexing.h"
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

bool reads_without_division(const shape::ShapeTracker &st, const Shape &inner) {
  std::vector<UOpRef> idx;
  for (size_t d = 0; d < st.shape().size(); d++)
    idx.push_back(UOp::make(Op::Range, DType::Int64, {UOp::const_int(st.shape()[d])}, static_cast<int64_t>(d)));
  auto [coords, valid] = view_coords(st, idx, inner);
  coords.push_back(valid);
  for (auto &c : coords)
    for (auto &n : uop::toposort(c))
      if (n->op == Op::IDiv || n->op == Op::Mod) return false;
  return true;
}

// The kernel's value with axes a and a+1 merged; null where some view does
// not merge them or a node is not elementwise.
class Merger {
 public:
  Merger(const Shape &from, size_t a) : from_(from), to_(merged(from, a)) {}
  const Shape &to() const { return to_; }

  UOpRef operator()(const UOpRef &u) {
    if (auto it = memo_.find(u.get()); it != memo_.end()) return it->second;
    UOpRef r = rewrite(u);
    memo_[u.get()] = r;
    return r;
  }

 private:
  UOpRef rewrite(const UOpRef &u) {
    if (u->op == Op::Const) return u;
    if (u->op == Op::View) {
      const auto &st = u->arg_as<shape::ShapeTracker>();
      const UOpRef &src = u->src[0];
      if (src->op == Op::DefineGlobal || src->op == Op::Const) {
        auto r = reshaped(st, to_);
        return r ? UOp::make(Op::View, u->dtype, u->src, *r) : nullptr;
      }
      // A computed value is read at its own shape: an identity view of it
      // passes the merge on to it; another view merges only where it still
      // reads the value's coordinates without division (a broadcast does).
      if (st.contiguous() && uop::shape_of(src) == from_) return (*this)(src);
      auto r = reshaped(st, to_);
      return r && reads_without_division(*r, uop::shape_of(src)) ? UOp::make(Op::View, u->dtype, u->src, *r) : nullptr;
    }
    if (!uop::is_alu(u->op) && u->op != Op::Cast) return nullptr;
    std::vector<UOpRef> src;
    for (auto &s : u->src) {
      src.push_back((*this)(s));
      if (!src.back()) return nullptr;
    }
    return u->with_src(std::move(src));
  }

  Shape from_, to_;
  std::unordered_map<const UOp *, UOpRef> memo_;
};

}  // namespace

UOpRef merge_axes(const UOpRef &ast) {
  if (ast->op != Op::Sink || ast->src.size() != 1) return ast;
  UOpRef store = ast->src[0];
  if (store->op != Op::Store || !std::holds_alternative<shape::ShapeTracker>(store->arg)) return ast;
  for (size_t a = store->arg_as<shape::ShapeTracker>().shape().size(); a-- > 1;) {
    const auto &st = store->arg_as<shape::ShapeTracker>();
    if (a + 1 >= st.shape().size()) continue;
    Merger m(st.shape(), a);
    auto out = reshaped(st, m.to());
    if (!out) continue;
    UOpRef value = m(store->src[1]);
    if (!value) continue;
    store = UOp::make(Op::Store, store->dtype, {store->src[0], value}, *out);
  }
  return store == ast->src[0] ? ast : UOp::make(Op::Sink, ast->dtype, {store});
}

}  // namespace loom::codegen
