#include "renderer/c_gemm_gather.h"

#include <cstdint>

#include "loom/error.h"
#include "renderer/c_gemm.h"

namespace loom::renderer {

using uop::Op;
using uop::UOpRef;

namespace {

// Batch axis d's coordinate in item group bz (the batch flattened row-major).
std::string batch_coord(const schedule::GemmShape &g, size_t d) {
  int64_t inner = 1;
  for (size_t e = d + 1; e < g.batch.size(); e++) inner *= g.batch[e];
  return "(bz / " + c_int64(inner) + " % " + c_int64(g.batch[d]) + ")";
}

// Whether u is the element's k or n, or one divided by or modulo positive
// constants below 2^32.
bool coordinate_chain(const UOpRef &u) {
  if (u->op == Op::Range) return u->arg_as<int64_t>() == codegen::kGatherRow || u->arg_as<int64_t>() == codegen::kGatherCol;
  if (u->op != Op::IDiv && u->op != Op::Mod) return false;
  const UOpRef &c = u->src[1];
  return c->op == Op::Const && c->arg_as<int64_t>() > 0 && c->arg_as<int64_t>() <= UINT32_MAX && coordinate_chain(u->src[0]);
}

}  // namespace

// A gathered operand's index arithmetic (codegen/gemm_gather.h) in C: its
// leaves are k, n and the batch coordinates of item group bz.
std::string gather_c(const UOpRef &u, const schedule::GemmShape &g, bool narrow, const char *row, const char *col) {
  auto op = [&](size_t i) { return gather_c(u->src[i], g, narrow, row, col); };
  if (narrow && (u->op == Op::IDiv || u->op == Op::Mod) && coordinate_chain(u))
    return "((int64_t)((uint32_t)" + op(0) + (u->op == Op::IDiv ? " / " : " % ") +
           std::to_string(u->src[1]->arg_as<int64_t>()) + "u))";
  auto infix = [&](const char *s) { return "(" + op(0) + " " + s + " " + op(1) + ")"; };
  switch (u->op) {
    case Op::Const: return u->dtype == DType::Bool ? std::to_string(u->arg_as<int64_t>()) : c_int64(u->arg_as<int64_t>());
    case Op::Range: {
      const int64_t leaf = u->arg_as<int64_t>();
      if (leaf == codegen::kGatherRow) return row;
      if (leaf == codegen::kGatherCol) return col;
      if (leaf == codegen::kGatherFlatBatch) return "F";
      if (leaf >= codegen::kGatherColAxis) return "N" + std::to_string(leaf - codegen::kGatherColAxis);
      if (leaf >= codegen::kGatherRowAxis) return "K" + std::to_string(leaf - codegen::kGatherRowAxis);
      return batch_coord(g, static_cast<size_t>(leaf - codegen::kGatherBatch));
    }
    case Op::Add: return infix("+");
    case Op::Sub: return infix("-");
    case Op::Mul: return infix("*");
    case Op::IDiv: return infix("/");
    case Op::Mod: return infix("%");
    case Op::CmpLt: return infix("<");
    case Op::CmpLe: return infix("<=");
    case Op::CmpEq: return infix("==");
    case Op::CmpNe: return infix("!=");
    case Op::And: return infix("&");
    case Op::Or: return infix("|");
    case Op::Xor: return infix("^");
    case Op::Neg: return "(-" + op(0) + ")";
    case Op::Not: return "(!" + op(0) + ")";
    case Op::Max: return "(" + op(0) + " > " + op(1) + " ? " + op(0) + " : " + op(1) + ")";
    case Op::Min: return "(" + op(0) + " < " + op(1) + " ? " + op(0) + " : " + op(1) + ")";
    case Op::Where: return "(" + op(0) + " ? " + op(1) + " : " + op(2) + ")";
    default: throw InternalError("a gathered GEMM operand's index holds " + std::string(uop::op_name(u->op)));
  }
}

// The statements that fill B's row k (columns [jc, jc + nc) into bg[y]) or
// column n (rows [pc, pc + kc) into bg[x * kc + y]), run by run.
std::string runs_c(const codegen::GatherRuns &r, const schedule::GemmShape &g) {
  const std::string ind(10, ' ');
  const bool rows = r.along_rows;
  const Shape &fixed = rows ? r.col_sizes : r.row_sizes, &run = rows ? r.row_sizes : r.col_sizes;
  const std::string fixed_name = rows ? "N" : "K", run_name = rows ? "K" : "N", fixed_index = rows ? "n" : "k";
  const std::string start = rows ? "pc" : "jc", count = rows ? "kc" : "nc", dst = rows ? "bg[x * kc + y + i]" : "bg[y + i]";
  std::string flat_batch = "0";
  for (size_t i = 0, mult = 1; i < r.batch_dims.size(); i++) {
    const auto d = static_cast<size_t>(r.batch_dims[r.batch_dims.size() - 1 - i]);
    flat_batch += " + " + batch_coord(g, d) + " * " + c_int64(static_cast<int64_t>(mult));
    mult *= static_cast<size_t>(g.batch[d]);
  }
  std::string s = ind + "const int64_t F = " + flat_batch + ";\n";
  for (size_t i = 0, inner = 1; i < fixed.size(); i++) {
    const size_t d = fixed.size() - 1 - i;
    s += ind + "const int64_t " + fixed_name + std::to_string(d) + " = " + fixed_index + " / " +
         c_int64(static_cast<int64_t>(inner)) + " % " + c_int64(fixed[d]) + ";\n";
    inner *= static_cast<size_t>(fixed[d]);
  }
  s += ind + "const int fixed_ok = " + gather_c(r.fixed_valid, g) + ";\n";
  const size_t p = run.size(), last = p - 1;
  std::string outer_ok = "fixed_ok";
  for (size_t j = 0, inner = 1; j < p; j++) {
    const size_t d = p - 1 - j;
    const std::string v = run_name + std::to_string(d), n = std::to_string(d), size = c_int64(run[d]);
    s += ind + "int64_t " + v + " = " + start + " / " + c_int64(static_cast<int64_t>(inner)) + " % " + size + ", lo" + n +
         " = 0, hi" + n + " = " + size + ";\n";
    inner *= static_cast<size_t>(run[d]);
    for (const UOpRef &b : r.lower[d]) {
      const std::string e = gather_c(b, g);
      s += ind + "if (lo" + n + " < " + e + ") lo" + n + " = " + e + ";\n";
    }
    for (const UOpRef &b : r.upper[d]) {
      const std::string e = gather_c(b, g);
      s += ind + "if (hi" + n + " > " + e + ") hi" + n + " = " + e + ";\n";
    }
    if (d != last) outer_ok += " && lo" + n + " <= " + v + " && " + v + " < hi" + n;
  }
  const std::string rl = run_name + std::to_string(last), sl = c_int64(run[last]), l = std::to_string(last);
  s += ind + "for (int64_t y = 0; y < " + count + ";) {\n";
  s += ind + "  const int64_t run = " + sl + " - " + rl + " < " + count + " - y ? " + sl + " - " + rl + " : " + count + " - y;\n";
  s += ind + "  int64_t a = lo" + l + " - " + rl + ", z = hi" + l + " - " + rl + ";\n";
  s += ind + "  a = a < 0 ? 0 : a > run ? run : a;\n";
  s += ind + "  z = !(" + outer_ok + ") || z < a ? a : z > run ? run : z;\n";
  s += ind + "  const float *src = b_all + (" + gather_c(r.flat, g) + ");\n";
  s += ind + "  for (int64_t i = 0; i < a; i++) " + dst + " = 0.0f;\n";
  s += ind + "  for (int64_t i = a; i < z; i++) " + dst + " = src[i * " + c_int64(r.step) + "];\n";
  s += ind + "  for (int64_t i = z; i < run; i++) " + dst + " = 0.0f;\n";
  s += ind + "  y += run;\n";
  s += ind + "  " + rl + " = 0;\n";
  std::string carry;
  for (size_t j = 0; j < last; j++) {  // the outer coordinates step once a run ends, the innermost first
    const std::string v = run_name + std::to_string(j);
    carry = "if (++" + v + " == " + c_int64(run[j]) + ") { " + v + " = 0; " + carry + "}";
  }
  if (!carry.empty()) s += ind + "  " + carry + "\n";
  return s + ind + "}\n";
}

}  // namespace loom::renderer
