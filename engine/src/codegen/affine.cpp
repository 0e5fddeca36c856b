#include "codegen/affine.h"

#include <algorithm>

namespace loom::codegen {

using uop::Op;
using uop::UOpRef;

namespace {

void add_affine(const UOpRef &u, int64_t scale, Affine &a) {
  auto int_const = [](const UOpRef &c) { return c->is_const() && std::holds_alternative<int64_t>(c->arg); };
  if (int_const(u)) {
    a.constant += scale * std::get<int64_t>(u->arg);
  } else if (u->op == Op::Add) {
    add_affine(u->src[0], scale, a);
    add_affine(u->src[1], scale, a);
  } else if (u->op == Op::Sub) {
    add_affine(u->src[0], scale, a);
    add_affine(u->src[1], -scale, a);
  } else if (u->op == Op::Mul && int_const(u->src[1])) {
    add_affine(u->src[0], scale * std::get<int64_t>(u->src[1]->arg), a);
  } else if (u->op == Op::Mul && int_const(u->src[0])) {
    add_affine(u->src[1], scale * std::get<int64_t>(u->src[0]->arg), a);
  } else {
    a.terms[u.get()] += scale;
  }
}

}  // namespace

Affine affine(const UOpRef &u) {
  Affine a;
  add_affine(u, 1, a);
  std::erase_if(a.terms, [](const auto &t) { return t.second == 0; });
  return a;
}

int64_t lane_stride(const std::vector<UOpRef> &idx) {
  if (idx.size() < 2) return 0;
  const Affine first = affine(idx[0]), second = affine(idx[1]);
  const int64_t s = second.constant - first.constant;
  if (second.terms != first.terms) return 0;
  for (size_t i = 2; i < idx.size(); i++) {
    const Affine a = affine(idx[i]);
    if (a.terms != first.terms || a.constant - first.constant != s * static_cast<int64_t>(i)) return 0;
  }
  return s;
}

bool consecutive(const std::vector<UOpRef> &idx) { return idx.size() == 1 || lane_stride(idx) == 1; }

bool aligned(const UOpRef &idx, int64_t w) {
  const Affine a = affine(idx);
  return a.constant % w == 0 &&
         std::all_of(a.terms.begin(), a.terms.end(), [&](const auto &t) { return t.second % w == 0; });
}

}  // namespace loom::codegen
