#include "codegen/indexing.h"

#include "uop/symbolic.h"

namespace loom::codegen {

using uop::Op;
using uop::UOp;

namespace {
UOpRef ic(int64_t v) { return UOp::const_int(v); }
UOpRef btrue() { return UOp::const_int(1, DType::Bool); }
UOpRef land(const UOpRef &a, const UOpRef &b) { return uop::alu(Op::And, a, b); }
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

std::pair<UOpRef, UOpRef> view_index(const shape::ShapeTracker &st, const std::vector<UOpRef> &idx_in) {
  std::vector<UOpRef> idx = idx_in;
  UOpRef valid = btrue();
  UOpRef flat;
  for (size_t vi = st.views.size(); vi-- > 0;) {
    const auto &v = st.views[vi];
    if (v.empty()) return {ic(0), UOp::const_int(0, DType::Bool)};
    UOpRef off = ic(v.offset);
    for (size_t d = 0; d < v.shape.size(); d++) {
      if (v.strides[d] != 0) off = off + idx[d] * v.strides[d];
      if (v.mask) {
        auto [b, e] = (*v.mask)[d];
        if (b > 0) valid = land(valid, uop::alu(Op::CmpLt, ic(b - 1), idx[d]));
        if (e < v.shape[d]) valid = land(valid, uop::alu(Op::CmpLt, idx[d], ic(e)));
      }
    }
    flat = uop::simplify(off);
    valid = uop::simplify(valid);
    if (vi > 0) idx = unravel(flat, st.views[vi - 1].shape);
  }
  return {flat, valid};
}

}  // namespace loom::codegen
