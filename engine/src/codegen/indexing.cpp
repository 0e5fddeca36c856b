#include "codegen/indexing.h"

#include <algorithm>
#include <optional>

#include "uop/symbolic.h"

namespace loom::codegen {

using uop::Op;
using uop::UOp;

namespace {
UOpRef ic(int64_t v) { return UOp::const_int(v); }
UOpRef btrue() { return UOp::const_int(1, DType::Bool); }
UOpRef land(const UOpRef &a, const UOpRef &b) { return uop::alu(Op::And, a, b); }

// The valid elements' bounds [lo, hi) of view dim d.
std::pair<int64_t, int64_t> valid_span(const shape::View &v, size_t d) {
  return v.mask ? (*v.mask)[d] : std::pair<int64_t, int64_t>{0, v.shape[d]};
}

// The coordinates into row-major `inner` that view `v` reads at `idx`, built
// without division when every walking view dim steps along one inner dim (a
// pad, shrink, flip, step, permute, broadcast or window of it): each inner
// coordinate is then the valid corner's coordinate plus a multiple of each
// view index, and stays inside its dim over every valid element, so the
// row-major index of the coordinates is the view's flat index there.
// nullopt when some dim does not step so (a merged or split dim).
std::optional<std::vector<UOpRef>> direct_coords(const shape::View &v, const std::vector<UOpRef> &idx,
                                                 const Shape &inner) {
  const shape::Strides rows = shape::contiguous_strides(inner);
  int64_t corner = v.offset;
  for (size_t d = 0; d < v.shape.size(); d++) corner += valid_span(v, d).first * v.strides[d];
  const int64_t n = shape::prod(inner);
  if (corner < 0 || corner >= n) return std::nullopt;
  std::vector<int64_t> lo(inner.size()), hi(inner.size());
  std::vector<UOpRef> coords(inner.size());
  for (size_t e = 0; e < inner.size(); e++) {
    lo[e] = hi[e] = corner / rows[e] % inner[e];
    coords[e] = ic(lo[e]);
  }
  for (size_t d = 0; d < v.shape.size(); d++) {
    auto [b, end] = valid_span(v, d);
    if (v.strides[d] == 0 || end - b <= 1) continue;  // constant over the valid elements
    const int64_t s = std::abs(v.strides[d]);
    size_t e = 0;  // the outermost walking inner dim whose row stride divides s
    while (e < inner.size() && (inner[e] == 1 || s % rows[e] != 0)) e++;
    if (e == inner.size()) return std::nullopt;
    const int64_t step = v.strides[d] / rows[e];
    (step > 0 ? hi[e] : lo[e]) += step * (end - 1 - b);
    coords[e] = coords[e] + (idx[d] + (-b)) * step;
  }
  for (size_t e = 0; e < inner.size(); e++) {
    if (lo[e] < 0 || hi[e] >= inner[e]) return std::nullopt;
    coords[e] = uop::simplify(coords[e]);
  }
  return coords;
}

// Walks a ShapeTracker's views from the logical one down: the index into the
// bottom view's flat space (or, with `inner`, coordinates into that row-major
// shape) and the validity of every mask on the way.
struct Walk {
  std::vector<UOpRef> idx;
  UOpRef flat, valid;
};

Walk walk(const shape::ShapeTracker &st, const std::vector<UOpRef> &idx_in, const Shape *inner) {
  Walk w{idx_in, nullptr, btrue()};
  for (size_t vi = st.views.size(); vi-- > 0;) {
    const auto &v = st.views[vi];
    if (v.empty()) {
      w.flat = ic(0);
      w.valid = UOp::const_int(0, DType::Bool);
      if (inner) w.idx.assign(inner->size(), ic(0));
      return w;
    }
    UOpRef off = ic(v.offset);
    for (size_t d = 0; d < v.shape.size(); d++) {
      if (v.strides[d] != 0) off = off + w.idx[d] * v.strides[d];
      auto [b, e] = valid_span(v, d);
      if (b > 0) w.valid = land(w.valid, uop::alu(Op::CmpLt, ic(b - 1), w.idx[d]));
      if (e < v.shape[d]) w.valid = land(w.valid, uop::alu(Op::CmpLt, w.idx[d], ic(e)));
    }
    w.valid = uop::simplify(w.valid);
    const Shape *below = vi > 0 ? &st.views[vi - 1].shape : inner;
    if (below) {
      if (auto c = direct_coords(v, w.idx, *below)) {
        w.idx = std::move(*c);
        continue;
      }
    }
    w.flat = uop::simplify(off);
    if (below) w.idx = unravel(w.flat, *below);
  }
  return w;
}

}  // namespace

std::vector<UOpRef> unravel(const UOpRef &flat, const Shape &shape) {
  std::vector<UOpRef> idx(shape.size());
  int64_t acc = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    if (shape[d] == 1) {
      idx[d] = ic(0);
      continue;
    }
    UOpRef q = acc == 1 ? flat : uop::alu(Op::IDiv, flat, ic(acc));
    idx[d] = uop::simplify(d == 0 ? q : uop::alu(Op::Mod, q, ic(shape[d])));
    acc *= shape[d];
  }
  return idx;
}

UOpRef ravel(const std::vector<UOpRef> &idx, const Shape &shape) {
  UOpRef flat = ic(0);
  int64_t acc = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    flat = flat + idx[d] * acc;
    acc *= shape[d];
  }
  return uop::simplify(flat);
}

std::pair<UOpRef, UOpRef> view_index(const shape::ShapeTracker &st, const std::vector<UOpRef> &idx) {
  Walk w = walk(st, idx, nullptr);
  return {w.flat, w.valid};
}

std::pair<std::vector<UOpRef>, UOpRef> view_coords(const shape::ShapeTracker &st, const std::vector<UOpRef> &idx,
                                                   const Shape &inner) {
  Walk w = walk(st, idx, &inner);
  return {std::move(w.idx), w.valid};
}

}  // namespace loom::codegen
