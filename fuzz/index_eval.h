// Evaluates an index expression (int64/bool ALU over Range variables, as views
// and the symbolic rules produce them) at given loop-variable values, with C's
// semantics (the rendered kernel's): division truncates toward zero.
#pragma once
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>

#include "uop/uop.h"

namespace loom::fuzz {

using IndexEnv = std::map<int64_t, int64_t>;  // Range id -> value

inline int64_t eval_index(const uop::UOpRef &u, const IndexEnv &env) {
  using uop::Op;
  auto s = [&](size_t i) { return eval_index(u->src[i], env); };
  switch (u->op) {
    case Op::Const: return std::holds_alternative<int64_t>(u->arg) ? std::get<int64_t>(u->arg)
                                                                   : static_cast<int64_t>(std::get<double>(u->arg));
    case Op::Range: return env.at(u->arg_as<int64_t>());
    case Op::Add: return s(0) + s(1);
    case Op::Sub: return s(0) - s(1);
    case Op::Mul: return s(0) * s(1);
    case Op::Neg: return -s(0);
    case Op::IDiv: return s(0) / s(1);
    case Op::Mod: return s(0) % s(1);
    case Op::Max: return std::max(s(0), s(1));
    case Op::Min: return std::min(s(0), s(1));
    case Op::CmpLt: return s(0) < s(1);
    case Op::CmpLe: return s(0) <= s(1);
    case Op::CmpEq: return s(0) == s(1);
    case Op::CmpNe: return s(0) != s(1);
    case Op::And: return s(0) && s(1);
    case Op::Or: return s(0) || s(1);
    case Op::Xor: return (s(0) != 0) != (s(1) != 0);
    case Op::Not: return !s(0);
    case Op::Where: return s(0) ? s(1) : s(2);
    default: throw std::runtime_error(std::string("eval_index: no evaluator for ") + uop::op_name(u->op));
  }
}

}  // namespace loom::fuzz
