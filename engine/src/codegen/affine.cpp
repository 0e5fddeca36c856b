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

bool consecutive(const std::vector<UOpRef> &idx) {
  const Affine first = affine(idx[0]);
  for (size_t i = 1; i < idx.size(); i++) {
    const Affine a = affine(idx[i]);
    if (a.terms != first.terms || a.constant - first.constant != static_cast<int64_t>(i)) return false;
  }
  return true;
}

bool aligned(const UOpRef &idx, int64_t w) {
  const Affine a = affine(idx);
  return a.constant % w == 0 &&
         std::all_of(a.terms.begin(), a.terms.end(), [&](const auto &t) { return t.second % w == 0; });
}

}  // namespace loom::codegen
