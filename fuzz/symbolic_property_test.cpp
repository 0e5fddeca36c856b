// The symbolic rule table must preserve values: random index expressions over
// bounded loop variables evaluate identically before and after simplify().
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <functional>
#include <map>

#include "uop/symbolic.h"

namespace loom::uop {
namespace {

UOpRef ic(int64_t v) { return UOp::const_int(v); }

int64_t eval(const UOpRef &u, const std::map<int64_t, int64_t> &env) {
  auto s = [&](size_t i) { return eval(u->src[i], env); };
  switch (u->op) {
    case Op::Const: return std::get<int64_t>(u->arg);
    case Op::Range: return env.at(u->arg_as<int64_t>());
    case Op::Add: return s(0) + s(1);
    case Op::Mul: return s(0) * s(1);
    case Op::IDiv: return s(0) / s(1);
    case Op::Mod: return s(0) % s(1);
    case Op::Max: return std::max(s(0), s(1));
    case Op::Min: return std::min(s(0), s(1));
    case Op::CmpLt: return s(0) < s(1);
    case Op::And: return s(0) && s(1);
    case Op::Where: return s(0) ? s(1) : s(2);
    default: throw std::runtime_error(std::string("no evaluator for ") + op_name(u->op));
  }
}

// Index-like expressions: sums of scaled loop variables, div/mod by positive
// constants, comparisons and selects, as views produce them.
rc::Gen<UOpRef> gen_expr(const std::vector<UOpRef> &ranges, int depth) {
  auto leaf = rc::gen::oneOf(rc::gen::map(rc::gen::inRange<size_t>(0, ranges.size()), [ranges](size_t i) { return ranges[i]; }),
                             rc::gen::map(rc::gen::inRange<int64_t>(-3, 25), ic));
  if (depth == 0) return leaf;
  auto sub = gen_expr(ranges, depth - 1);
  auto divisor = rc::gen::inRange<int64_t>(1, 9);
  return rc::gen::oneOf(
      leaf,
      rc::gen::apply([](UOpRef a, UOpRef b) { return alu(Op::Add, a, b); }, sub, sub),
      rc::gen::apply([](UOpRef a, int64_t c) { return alu(Op::Mul, a, ic(c)); }, sub, rc::gen::inRange<int64_t>(-3, 13)),
      rc::gen::apply([](UOpRef a, int64_t c) { return alu(Op::IDiv, a, ic(c)); }, sub, divisor),
      rc::gen::apply([](UOpRef a, int64_t c) { return alu(Op::Mod, a, ic(c)); }, sub, divisor),
      rc::gen::apply([](UOpRef a, UOpRef b, UOpRef x, UOpRef y) { return where(alu(Op::CmpLt, a, b), x, y); }, sub,
                     sub, sub, sub));
}

RC_GTEST_PROP(SymbolicRules, SimplifyPreservesValues, ()) {
  const auto sizes = *rc::gen::container<std::vector<int64_t>>(3, rc::gen::inRange<int64_t>(1, 9));
  std::vector<UOpRef> ranges;
  for (size_t i = 0; i < sizes.size(); i++)
    ranges.push_back(UOp::make(Op::Range, DType::Int64, {ic(sizes[i])}, static_cast<int64_t>(i)));
  const UOpRef e = *gen_expr(ranges, 3);
  const UOpRef s = simplify(e);
  RC_CLASSIFY(s != e, "simplified");
  RC_CLASSIFY(toposort(e).size() > 6, "more than 6 nodes");
  std::map<int64_t, int64_t> env;
  for (int64_t a = 0; a < sizes[0]; a++)
    for (int64_t b = 0; b < sizes[1]; b++)
      for (int64_t c = 0; c < sizes[2]; c++) {
        env = {{0, a}, {1, b}, {2, c}};
        RC_ASSERT(eval(e, env) == eval(s, env));
      }
}

}  // namespace
}  // namespace loom::uop
