// The UOp operation set: graph ops describe lazy tensors; kernel ops describe
// one kernel after scheduling; ALU ops appear in both. Each op is one row of
// uop/ops.def (what each op's src and arg hold is written there); the enum
// and the facts below are derived from it.
#pragma once
#include <cstddef>
#include <cstdint>

namespace loom::uop {

enum class Op : uint8_t {
#define LOOM_OP(name, ...) name,
#include "uop/ops.def"
#undef LOOM_OP
};

// An op's row of ops.def, as data.
struct OpInfo {
  enum Group : uint8_t { Graph, Kernel, Program, Vector, Alu };
  enum Flags : uint8_t { kCommutative = 1, kComparison = 2, kVector = 4, kPays = 8 };
  // How the C target spells a unary math op (ops.def says what each means).
  enum CMath : uint8_t { kOwn, kLibm, kPrelude };
  const char *name;
  Group group;
  int arity;  // operands of an ALU op; 0 for the others
  uint8_t flags;
  const char *math;    // the C math library's function for a float operand, "" where none
  CMath c;
  const char *vector;  // the C prelude's vector function, "" where none
};

namespace op_table {
using enum OpInfo::Group;
using enum OpInfo::Flags;
using enum OpInfo::CMath;
inline constexpr OpInfo kOps[] = {
#define LOOM_OP(name, str, group, arity, flags, math, c, vector) \
  {str, group, arity, static_cast<uint8_t>(flags), math, c, vector},
#include "uop/ops.def"
#undef LOOM_OP
};
}  // namespace op_table
using op_table::kOps;
inline constexpr size_t kOpCount = sizeof(kOps) / sizeof(kOps[0]);

constexpr const OpInfo &op_info(Op op) { return kOps[static_cast<size_t>(op)]; }
constexpr const char *op_name(Op op) { return op_info(op).name; }
// A kernel's leaves that are no computation: a constant, a runtime scalar, a buffer.
inline bool is_kernel_leaf(Op op) { return op == Op::Const || op == Op::DefineVar || op == Op::DefineGlobal; }
// A kernel's statements that write a buffer: {DefineGlobal, index, value[, gate]}.
inline bool is_store(Op op) { return op == Op::Store || op == Op::AtomicAdd; }
constexpr bool is_alu(Op op) { return op_info(op).group == OpInfo::Alu; }
constexpr bool is_commutative(Op op) { return op_info(op).flags & OpInfo::kCommutative; }
constexpr bool is_comparison(Op op) { return op_info(op).flags & OpInfo::kComparison; }

}  // namespace loom::uop
