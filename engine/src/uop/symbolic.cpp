#include "uop/symbolic.h"

#include <algorithm>
#include <limits>
#include <mutex>
#include <unordered_map>

namespace loom::uop {

namespace {
constexpr int64_t kMin = std::numeric_limits<int64_t>::min() / 4, kMax = std::numeric_limits<int64_t>::max() / 4;

bool is_index(const UOpRef &u) { return u->dtype == DType::Int64 || u->dtype == DType::Int32 || u->dtype == DType::Bool; }
int64_t cval(const UOpRef &u) { return std::get<int64_t>(u->arg); }
bool is_iconst(const UOpRef &u) { return u->is_const() && std::holds_alternative<int64_t>(u->arg); }
UOpRef iconst(int64_t v, DType dt) { return UOp::const_int(dt == DType::Bool ? (v != 0) : v, dt); }

std::pair<int64_t, int64_t> compute_bounds(const UOpRef &u) {
  if (is_iconst(u)) return {cval(u), cval(u)};
  if (u->op == Op::Range) return {0, is_iconst(u->src[0]) ? cval(u->src[0]) - 1 : kMax};
  if (u->dtype == DType::Bool && !is_alu(u->op)) return {0, 1};
  if (!is_index(u) || !is_alu(u->op)) return {kMin, kMax};
  auto b = [](const UOpRef &x) { return bounds(x); };
  switch (u->op) {
    case Op::Add: {
      auto [a0, a1] = b(u->src[0]);
      auto [b0, b1] = b(u->src[1]);
      if (a0 <= kMin || b0 <= kMin || a1 >= kMax || b1 >= kMax) return {kMin, kMax};
      return {a0 + b0, a1 + b1};
    }
    case Op::Mul: {
      auto [a0, a1] = b(u->src[0]);
      auto [b0, b1] = b(u->src[1]);
      auto big = [](int64_t v) { return v <= -(1ll << 30) || v >= (1ll << 30); };
      if (big(a0) || big(a1) || big(b0) || big(b1)) return {kMin, kMax};
      int64_t c[4] = {a0 * b0, a0 * b1, a1 * b0, a1 * b1};
      return {*std::min_element(c, c + 4), *std::max_element(c, c + 4)};
    }
    case Op::IDiv: {
      auto [a0, a1] = b(u->src[0]);
      if (!is_iconst(u->src[1]) || cval(u->src[1]) <= 0 || a0 < 0) return {kMin, kMax};
      return {a0 / cval(u->src[1]), a1 / cval(u->src[1])};
    }
    case Op::Mod: {
      auto [a0, a1] = b(u->src[0]);
      if (!is_iconst(u->src[1]) || cval(u->src[1]) <= 0 || a0 < 0) return {kMin, kMax};
      int64_t c = cval(u->src[1]);
      if (a1 < c) return {a0, a1};
      return {0, c - 1};
    }
    case Op::Max: {
      auto [a0, a1] = b(u->src[0]);
      auto [b0, b1] = b(u->src[1]);
      return {std::max(a0, b0), std::max(a1, b1)};
    }
    case Op::Min: {
      auto [a0, a1] = b(u->src[0]);
      auto [b0, b1] = b(u->src[1]);
      return {std::min(a0, b0), std::min(a1, b1)};
    }
    case Op::Where: {
      auto [a0, a1] = b(u->src[1]);
      auto [b0, b1] = b(u->src[2]);
      return {std::min(a0, b0), std::max(a1, b1)};
    }
    case Op::CmpLt: {
      auto [a0, a1] = b(u->src[0]);
      auto [b0, b1] = b(u->src[1]);
      if (a1 < b0) return {1, 1};
      if (a0 >= b1) return {0, 0};
      return {0, 1};
    }
    case Op::And: case Op::Or: case Op::Xor: case Op::Not: case Op::CmpLe: case Op::CmpEq: case Op::CmpNe:
      return u->dtype == DType::Bool ? std::pair<int64_t, int64_t>{0, 1} : std::pair<int64_t, int64_t>{kMin, kMax};
    default: return {kMin, kMax};
  }
}

// Splits a sum into (term, coefficient) pairs plus a constant.
void split_sum(const UOpRef &u, int64_t coef, std::vector<std::pair<UOpRef, int64_t>> &terms, int64_t &konst) {
  if (u->op == Op::Add) {
    split_sum(u->src[0], coef, terms, konst);
    split_sum(u->src[1], coef, terms, konst);
  } else if (is_iconst(u)) {
    konst += coef * cval(u);
  } else if (u->op == Op::Mul && is_iconst(u->src[1])) {
    split_sum(u->src[0], coef * cval(u->src[1]), terms, konst);
  } else if (u->op == Op::Mul && is_iconst(u->src[0])) {
    split_sum(u->src[1], coef * cval(u->src[0]), terms, konst);
  } else {
    terms.emplace_back(u, coef);
  }
}

UOpRef build_sum(const std::vector<std::pair<UOpRef, int64_t>> &terms, int64_t konst, DType dt) {
  UOpRef acc;
  for (auto &[t, c] : terms) {
    if (c == 0) continue;
    UOpRef term = c == 1 ? t : alu(Op::Mul, t, iconst(c, dt));
    acc = acc ? alu(Op::Add, acc, term) : term;
  }
  if (!acc) return iconst(konst, dt);
  return konst ? alu(Op::Add, acc, iconst(konst, dt)) : acc;
}

// x // c and x % c for non-negative x: pull out the terms whose coefficients c divides.
UOpRef fold_divmod(const UOpRef &x, int64_t c, bool is_mod) {
  if (c <= 0 || bounds(x).first < 0) return nullptr;
  std::vector<std::pair<UOpRef, int64_t>> terms, whole, rest;
  int64_t konst = 0;
  split_sum(x, 1, terms, konst);
  for (auto &[t, k] : terms) {
    if (bounds(t).first < 0) return nullptr;
    (k % c == 0 ? whole : rest).push_back({t, k});
  }
  if (konst < 0) return nullptr;
  int64_t kq = konst / c, kr = konst % c;
  UOpRef r = build_sum(rest, kr, x->dtype);
  auto [r0, r1] = bounds(r);
  if (r0 < 0) return nullptr;
  bool r_small = r1 < c;  // the remainder part never carries into the quotient
  if (!r_small && whole.empty() && kq == 0) return nullptr;  // nothing to pull out
  for (auto &w : whole) w.second /= c;
  if (is_mod) {
    if (r_small) return r;
    return r == x ? nullptr : alu(Op::Mod, r, iconst(c, x->dtype));
  }
  if (!r_small) whole.push_back({alu(Op::IDiv, r, iconst(c, x->dtype)), 1});
  return build_sum(whole, kq, x->dtype);
}

UOpRef fold_const(const UOpRef &u) {
  for (auto &s : u->src)
    if (!is_iconst(s)) return nullptr;
  auto v = [&](int i) { return cval(u->src[i]); };
  DType dt = u->dtype;
  switch (u->op) {
    case Op::Neg: return iconst(-v(0), dt);
    case Op::Not: return iconst(!v(0), dt);
    case Op::Add: return iconst(v(0) + v(1), dt);
    case Op::Sub: return iconst(v(0) - v(1), dt);
    case Op::Mul: return iconst(v(0) * v(1), dt);
    case Op::IDiv: return v(1) ? iconst(v(0) / v(1), dt) : nullptr;
    case Op::Mod: return v(1) ? iconst(v(0) % v(1), dt) : nullptr;
    case Op::Max: return iconst(std::max(v(0), v(1)), dt);
    case Op::Min: return iconst(std::min(v(0), v(1)), dt);
    case Op::CmpLt: return iconst(v(0) < v(1), dt);
    case Op::CmpLe: return iconst(v(0) <= v(1), dt);
    case Op::CmpEq: return iconst(v(0) == v(1), dt);
    case Op::CmpNe: return iconst(v(0) != v(1), dt);
    case Op::And: return iconst(dt == DType::Bool ? (v(0) && v(1)) : (v(0) & v(1)), dt);
    case Op::Or: return iconst(dt == DType::Bool ? (v(0) || v(1)) : (v(0) | v(1)), dt);
    case Op::Where: return v(0) ? u->src[1] : u->src[2];
    default: return nullptr;
  }
}

using P = UPat;
const UOpRef &x_of(const Match &m) { return m["x"]; }

}  // namespace

std::pair<int64_t, int64_t> bounds(const UOpRef &u) {
  static std::mutex mu;
  static std::unordered_map<const UOp *, std::pair<UOpRef, std::pair<int64_t, int64_t>>> cache;
  {
    std::lock_guard<std::mutex> l(mu);
    if (auto it = cache.find(u.get()); it != cache.end() && it->second.first == u) return it->second.second;
  }
  auto r = compute_bounds(u);
  std::lock_guard<std::mutex> l(mu);
  if (cache.size() > 200000) cache.clear();
  cache[u.get()] = {u, r};
  return r;
}

const PatternMatcher &symbolic() {
  static const PatternMatcher pm({
      // ALU over constants -> constant (integers and bools only: float folding could round differently)
      {P::ops({Op::Neg, Op::Not, Op::Add, Op::Sub, Op::Mul, Op::IDiv, Op::Mod, Op::Max, Op::Min, Op::CmpLt,
               Op::CmpLe, Op::CmpEq, Op::CmpNe, Op::And, Op::Or, Op::Where}),
       [](const Match &m) { return is_index(m.root) || m.root->op == Op::Where ? fold_const(m.root) : nullptr; }},
      // x + 0 -> x
      {P::var("x") + 0, [](const Match &m) { return is_index(x_of(m)) ? x_of(m) : nullptr; }},
      // x * 1 -> x
      {P::var("x") * 1, [](const Match &m) { return is_index(x_of(m)) ? x_of(m) : nullptr; }},
      // x * 0 -> 0 (integers only: a float x may be NaN)
      {P::var("x") * 0, [](const Match &m) { return is_index(x_of(m)) ? iconst(0, x_of(m)->dtype) : nullptr; }},
      // (x + c1) + c2 -> x + (c1 + c2)
      {(P::var("x") + P::cvar("c1")) + P::cvar("c2"),
       [](const Match &m) {
         if (!is_index(x_of(m)) || !is_iconst(m["c1"]) || !is_iconst(m["c2"])) return UOpRef();
         return alu(Op::Add, x_of(m), iconst(cval(m["c1"]) + cval(m["c2"]), x_of(m)->dtype));
       }},
      // (x * c1) * c2 -> x * (c1 * c2)
      {(P::var("x") * P::cvar("c1")) * P::cvar("c2"),
       [](const Match &m) {
         if (!is_index(x_of(m)) || !is_iconst(m["c1"]) || !is_iconst(m["c2"])) return UOpRef();
         return alu(Op::Mul, x_of(m), iconst(cval(m["c1"]) * cval(m["c2"]), x_of(m)->dtype));
       }},
      // (x + y) * c -> x*c + y*c (distributes so div/mod folding sees every term)
      {(P::var("x") + P::var("y")) * P::cvar("c"),
       [](const Match &m) {
         if (!is_index(x_of(m)) || !is_iconst(m["c"])) return UOpRef();
         return alu(Op::Add, alu(Op::Mul, x_of(m), m["c"]), alu(Op::Mul, m["y"], m["c"]));
       }},
      // x // c and x % c with bounded or divisible terms
      {P::op(Op::IDiv, {P::var("x"), P::cvar("c")}),
       [](const Match &m) { return is_iconst(m["c"]) ? fold_divmod(x_of(m), cval(m["c"]), false) : nullptr; }},
      {P::op(Op::Mod, {P::var("x"), P::cvar("c")}),
       [](const Match &m) { return is_iconst(m["c"]) ? fold_divmod(x_of(m), cval(m["c"]), true) : nullptr; }},
      // (x // a) // b -> x // (a*b) for non-negative x
      {P::op(Op::IDiv, {P::op(Op::IDiv, {P::var("x"), P::cvar("a")}), P::cvar("b")}),
       [](const Match &m) {
         if (!is_iconst(m["a"]) || !is_iconst(m["b"]) || cval(m["a"]) <= 0 || cval(m["b"]) <= 0 ||
             bounds(x_of(m)).first < 0)
           return UOpRef();
         return alu(Op::IDiv, x_of(m), iconst(cval(m["a"]) * cval(m["b"]), x_of(m)->dtype));
       }},
      // (x % a) % b -> x % b when b divides a
      {P::op(Op::Mod, {P::op(Op::Mod, {P::var("x"), P::cvar("a")}), P::cvar("b")}),
       [](const Match &m) {
         if (!is_iconst(m["a"]) || !is_iconst(m["b"]) || cval(m["b"]) <= 0 || cval(m["a"]) % cval(m["b"]) != 0 ||
             bounds(x_of(m)).first < 0)
           return UOpRef();
         return alu(Op::Mod, x_of(m), m["b"]);
       }},
      // comparisons decided by bounds -> constant
      {P::ops({Op::CmpLt}, {P::var("x"), P::var("y")}),
       [](const Match &m) {
         if (!is_index(x_of(m))) return UOpRef();
         auto [lo, hi] = bounds(m.root);
         return lo == hi ? iconst(lo, DType::Bool) : nullptr;
       }},
      // x and true -> x ; x and false -> false
      {P::op(Op::And, {P::var("x"), P::cvar("c")}),
       [](const Match &m) {
         if (m.root->dtype != DType::Bool || !is_iconst(m["c"])) return UOpRef();
         return cval(m["c"]) ? x_of(m) : iconst(0, DType::Bool);
       }},
      // where(c, x, x) -> x
      {P::op(Op::Where, {P::var("c"), P::var("x"), P::var("x")}), [](const Match &m) { return x_of(m); }},
  });
  return pm;
}

}  // namespace loom::uop
