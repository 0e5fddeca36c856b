#include "renderer/cstyle.h"

#include <cmath>
#include <cstdio>

#include "codegen/vectorize.h"
#include "loom/error.h"
#include "uop/graph.h"

namespace loom::renderer {

namespace {
bool is_half(DType d) { return d == DType::Float16 || d == DType::BFloat16; }
using R = CStyleRenderer;

// The math library's function of `op`'s row (uop/ops.def) at d's width:
// sinf, or sin for float64.
std::string libm(Op op, DType d) { return std::string(uop::op_info(op).math) + (d == DType::Float64 ? "" : "f"); }
// A unary math function of the dtype's width, rounded as the dtype rounds.
std::string math(R &r, const UOpRef &u) {
  return r.rounded(u->dtype, libm(u->op, u->dtype) + "(" + r.operand(u, 0) + ")");
}
// float64: libm's; the float types: the prelude's branch-free (vectorizable)
// loom_<math>f.
std::string prelude_math(R &r, const UOpRef &u) {
  if (u->dtype == DType::Float64) return math(r, u);
  return r.rounded(u->dtype, "loom_" + std::string(uop::op_info(u->op).math) + "f(" + r.operand(u, 0) + ")");
}
// a * b + c rounded once: C's fma at the dtype's width.
std::string fused(R &r, DType d, const std::string &a, const std::string &b, const std::string &c) {
  return r.rounded(d, libm(Op::MulAdd, d) + "(" + a + ", " + b + ", " + c + ")");
}
// acc = acc (op) value: a REDUCE or SCAN's accumulate step; a MULADD fold
// reads its MUL's factors (codegen/mul_add.h).
std::string accumulate(R &r, const UOpRef &u) {
  const std::string a = r.name_of(u);
  const Op op = u->arg_as<uop::ReduceArg>().op;
  if (op == Op::MulAdd) return a + " = " + fused(r, u->dtype, r.operand(u->src[0], 0), r.operand(u->src[0], 1), a) + ";";
  return a + " = " + r.combine(op, u->dtype, a, r.operand(u, 0), false) + ";";
}
std::string infix(R &r, const UOpRef &u, const char *op) {
  return "(" + r.operand(u, 0) + " " + op + " " + r.operand(u, 1) + ")";
}
}  // namespace

const char *R::reg_type(DType d) const {
  switch (d) {
    case DType::Bool: return "bool";
    case DType::UInt8: return "uint8_t";
    case DType::Int8: return "int8_t";
    case DType::Int16: return "int16_t";
    case DType::Int32: return "int32_t";
    case DType::Int64: return "int64_t";
    case DType::Float16: case DType::BFloat16: case DType::Float32: return "float";
    case DType::Float64: return "double";
  }
  return "?";
}

const char *R::mem_type(DType d) const {
  if (d == DType::Bool) return "uint8_t";
  if (is_half(d)) return "uint16_t";
  return reg_type(d);
}

std::string R::render_const(const UOpRef &c) const {
  DType d = c->dtype;
  if (!is_float(d)) {
    int64_t v = std::get<int64_t>(c->arg);
    if (d == DType::Bool) return v ? "1" : "0";
    if (d == DType::Int64) return v == INT64_MIN ? "INT64_MIN" : "(int64_t)" + std::to_string(v) + "LL";
    return "(" + std::string(reg_type(d)) + ")" + std::to_string(v);
  }
  double v = c->const_value();
  if (d == DType::Float16) v = half_bits_to_float(float_to_half_bits(static_cast<float>(v)));
  if (d == DType::BFloat16) v = bf16_bits_to_float(float_to_bf16_bits(static_cast<float>(v)));
  bool dbl = d == DType::Float64;
  if (std::isnan(v)) return dbl ? "(double)NAN" : "NAN";
  if (std::isinf(v)) return std::string(v < 0 ? "-" : "") + (dbl ? "(double)INFINITY" : "INFINITY");
  char buf[64];
  if (dbl) std::snprintf(buf, sizeof buf, "%.17g", v);
  else std::snprintf(buf, sizeof buf, "%.9gf", static_cast<double>(static_cast<float>(v)));
  std::string s = buf;
  if (s.find_first_of(".eEn") == std::string::npos) s.insert(dbl ? s.size() : s.size() - 1, ".0");
  return "(" + s + ")";
}

std::string R::var_name(const UOpRef &v) { return "v" + std::to_string(v->arg_as<int64_t>()); }

std::string R::load(DType d, const std::string &ptr) const {
  if (d == DType::Float16) return "loom_h2f(" + ptr + ")";
  if (d == DType::BFloat16) return "loom_bf2f(" + ptr + ")";
  return d == DType::Bool ? "(" + std::string(reg_type(d)) + ")" + ptr : ptr;
}

std::string R::store(DType d, const std::string &v) const {
  if (d == DType::Float16) return "loom_f2h(" + v + ")";
  if (d == DType::BFloat16) return "loom_f2bf(" + v + ")";
  return v;
}

std::string R::name_of(const UOpRef &u) {
  if (u->op == Op::Const) return render_const(u);
  if (u->op == Op::DefineVar) return var_name(u);
  auto it = names_.find(u.get());
  LOOM_CHECK(it != names_.end(), std::string("operand not rendered: ") + uop::op_name(u->op));
  return it->second;
}

std::string R::def(const UOpRef &u, const std::string &prefix) {
  std::string n = prefix + std::to_string(counter_++);
  names_[u.get()] = n;
  return n;
}

void R::bind(const UOpRef &u, const std::string &name) { names_[u.get()] = name; }

std::string R::expr(const UOpRef &u) {
  auto it = expressions().find(u->op);
  return it != expressions().end() ? it->second(*this, u) : combine(u->op, u->dtype, operand(u, 0), operand(u, 1), true);
}

std::string R::statement(const UOpRef &u) {
  if (codegen::lanes(*u) > 1 || u->op == Op::Gep) return vector_statement(u);
  auto it = statements().find(u->op);
  return it != statements().end() ? it->second(*this, u) : define_value(u);
}

std::string R::render(const codegen::KernelSpec &p) {
  p_ = &p;
  os_.str("");
  names_.clear();
  counter_ = 0;
  os_ << header();
  int depth = 1;
  for (const UOpRef &u : p.uops) {
    if (u->op == Op::EndRange) depth--;
    const std::string s = statement(u);
    std::istringstream lines(s);
    for (std::string line; std::getline(lines, line);) os_ << std::string(2 * depth, ' ') << line << "\n";
    if (u->op == Op::Range) depth++;
  }
  os_ << "}\n";
  return os_.str();
}

std::string R::render_values(const codegen::KernelSpec &p, const UOpRef &value,
                             const std::vector<std::pair<UOpRef, std::string>> &bound, const std::string &indent,
                             std::string &stored) {
  p_ = &p;
  names_.clear();
  counter_ = 0;
  for (const auto &[u, name] : bound) bind(u, name);
  std::string code;
  for (const UOpRef &u : uop::toposort(value)) {
    if (names_.contains(u.get()) || u->op == Op::Const || u->op == Op::DefineVar || u->op == Op::DefineGlobal) continue;
    LOOM_CHECK(u->op != Op::Range, "a loop variable the template does not name");
    code += indent + define_value(u) + "\n";
  }
  stored = store(value->dtype, name_of(value));
  return code;
}

std::string R::vector_statement(const UOpRef &u) {
  LOOM_CHECK(false, std::string("this target renders no vectors: ") + uop::op_name(u->op));
  return "";
}

std::string R::rounded(DType d, const std::string &e) const {
  if (d == DType::Float16) return "loom_rh(" + e + ")";
  if (d == DType::BFloat16) return "loom_rbf(" + e + ")";
  return e;
}

std::string R::wrapped(DType d, const std::string &e) const {
  if (is_float(d)) return rounded(d, e);
  if (d == DType::Bool) return "(" + std::string(reg_type(d)) + ")(" + e + ")";
  return "(" + std::string(reg_type(d)) + ")(" + e + ")";
}

std::string R::combine(Op op, DType d, const std::string &a, const std::string &b, bool round) const {
  std::string e;
  const bool f = is_float(d), dbl = d == DType::Float64;
  switch (op) {
    case Op::Add: e = d == DType::Bool ? "(" + a + " | " + b + ")" : "(" + a + " + " + b + ")"; break;
    case Op::Sub: e = "(" + a + " - " + b + ")"; break;
    case Op::Mul: e = d == DType::Bool ? "(" + a + " & " + b + ")" : "(" + a + " * " + b + ")"; break;
    case Op::Div: e = "(" + a + " / " + b + ")"; break;
    case Op::IDiv: e = "(" + a + " / " + b + ")"; break;
    case Op::Mod: e = f ? libm(op, d) + "(" + a + ", " + b + ")" : "(" + a + " % " + b + ")"; break;
    case Op::Max:
      e = f ? std::string(dbl ? "loom_maxd(" : "loom_maxf(") + a + ", " + b + ")"
            : "(" + a + " > " + b + " ? " + a + " : " + b + ")";
      break;
    case Op::Min:
      e = f ? std::string(dbl ? "loom_mind(" : "loom_minf(") + a + ", " + b + ")"
            : "(" + a + " < " + b + " ? " + a + " : " + b + ")";
      break;
    case Op::Pow: e = f ? libm(op, d) + "(" + a + ", " + b + ")" : "loom_ipow(" + a + ", " + b + ")"; break;
    case Op::And: e = "(" + a + " & " + b + ")"; break;
    case Op::Or: e = "(" + a + " | " + b + ")"; break;
    case Op::Xor: e = "(" + a + " ^ " + b + ")"; break;
    // Shifts go through 64 bits (unsigned for <<, so it wraps) and truncate back.
    case Op::Shl: e = "((" + b + ") < 0 || (" + b + ") > 63 ? 0 : (int64_t)((uint64_t)(" + a + ") << (" + b + ")))"; break;
    case Op::Shr:
      e = "((" + b + ") < 0 || (" + b + ") > 63 ? ((" + a + ") < 0 ? -1 : 0) : ((int64_t)(" + a + ") >> (" + b + ")))";
      break;
    default: LOOM_CHECK(false, std::string("no C form for ") + uop::op_name(op));
  }
  if (!round) return f ? e : wrapped(d, e);
  return wrapped(d, e);
}

std::string R::acc_identity(const UOpRef &fold) const {
  const Op op = fold->arg_as<uop::ReduceArg>().op;
  const DType d = fold->dtype;
  if (op == Op::Add || op == Op::MulAdd) return is_float(d) ? "0.0f" : "0";
  if (op == Op::Mul) return is_float(d) ? "1.0f" : "1";
  const bool mx = op == Op::Max;
  if (is_float(d)) return mx ? "-INFINITY" : "INFINITY";
  if (d == DType::Bool) return mx ? "0" : "1";
  static const std::unordered_map<int, std::pair<const char *, const char *>> lim{
      {static_cast<int>(DType::UInt8), {"0", "UINT8_MAX"}}, {static_cast<int>(DType::Int8), {"INT8_MIN", "INT8_MAX"}},
      {static_cast<int>(DType::Int16), {"INT16_MIN", "INT16_MAX"}},
      {static_cast<int>(DType::Int32), {"INT32_MIN", "INT32_MAX"}},
      {static_cast<int>(DType::Int64), {"INT64_MIN", "INT64_MAX"}}};
  auto [lo, hi] = lim.at(static_cast<int>(d));
  return mx ? lo : hi;
}

std::string R::define_value(const UOpRef &u) {
  const std::string e = expr(u);
  return std::string(reg_type(u->dtype)) + " " + def(u, u->op == Op::Load ? "val" : "alu") + " = " + e + ";";
}

// Statements, one line each (a value without a row: define_value).
const R::Table &R::statement_rules() {
  static const Table t{
      {Op::Range, [](R &r, const UOpRef &u) {  // opens the loop
         const std::string var = "r" + std::to_string(u->arg_as<int64_t>());
         r.bind(u, var);
         return r.loop(u, var);
       }},
      {Op::EndRange, [](R &, const UOpRef &) { return std::string("}"); }},
      {Op::DefineAcc, [](R &r, const UOpRef &u) {  // acc = identity
         const UOpRef &fold = u->src[0];
         return std::string(r.reg_type(fold->dtype)) + " " + r.def(fold, "acc") + " = " + r.acc_identity(fold) + ";";
       }},
      {Op::Reduce, accumulate},
      {Op::Scan, accumulate},  // a scan accumulates like a reduction, inside its loop
      {Op::Store, [](R &r, const UOpRef &u) {  // buf[index] = value, under its gate
         const std::string st = r.buffer(u->src[0]->arg_as<int64_t>()) + "[" + r.operand(u, 1) +
                                "] = " + r.store(u->src[2]->dtype, r.operand(u, 2)) + ";";
         return u->src.size() > 3 ? "if (" + r.operand(u, 3) + ") " + st : st;
       }},
  };
  return t;
}

namespace {

// A unary math op's row, from its row of uop/ops.def: the math library's
// function, or the prelude's.
R::Table math_rows() {
  R::Table t;
  for (size_t i = 0; i < uop::kOpCount; i++) {
    const uop::OpInfo &o = uop::kOps[i];
    if (o.c == uop::OpInfo::kLibm) t[Op(i)] = math;
    if (o.c == uop::OpInfo::kPrelude) t[Op(i)] = prelude_math;
  }
  return t;
}

}  // namespace

// Expressions: these rows, and the unary math ops' (math_rows) where none of
// these is theirs. Ops without a row are binary: `combine` spells them.
const R::Table &R::expression_rules() {
  static const Table t = [] {
    Table rows{
      {Op::Load, [](R &r, const UOpRef &u) {  // buf[index], or 0 where the gate is off
         const std::string v = r.load(u->src[0]->dtype, r.buffer(u->src[0]->arg_as<int64_t>()) + "[" + r.operand(u, 1) + "]");
         return u->src.size() > 2 ? "(" + r.operand(u, 2) + " ? " + v + " : 0)" : v;
       }},
      {Op::Cast, [](R &r, const UOpRef &u) {
         const DType d = u->dtype, from = u->src[0]->dtype;
         const std::string x = r.operand(u, 0);
         if (d == DType::Bool) return "(" + x + " != 0)";
         if (is_half(d)) return r.rounded(d, "(float)" + x);
         // float -> int as torch's CPU conversion: uint8 and int64 through int64,
         // int8, int16 and int32 through int32 (x86's conversion: out of
         // range or NaN gives the most negative value, then the low bits)
         if (!is_float(d) && is_float(from))
           return "(" + std::string(r.reg_type(d)) + ")(" + (d == DType::UInt8 || d == DType::Int64 ? "int64_t" : "int32_t") +
                  ")" + x;
         return "(" + std::string(r.reg_type(d)) + ")" + x;
       }},
      {Op::Neg, [](R &r, const UOpRef &u) {
         return is_float(u->dtype) ? "(-" + r.operand(u, 0) + ")" : r.wrapped(u->dtype, "-" + r.operand(u, 0));
       }},
      {Op::Abs, [](R &r, const UOpRef &u) {
         const std::string x = r.operand(u, 0);
         return is_float(u->dtype) ? libm(Op::Abs, u->dtype) + "(" + x + ")"
                                   : r.wrapped(u->dtype, "(" + x + " < 0 ? -" + x + " : " + x + ")");
       }},
      {Op::Recip, [](R &r, const UOpRef &u) {
         return r.rounded(u->dtype, std::string(u->dtype == DType::Float64 ? "(1.0 / " : "(1.0f / ") + r.operand(u, 0) + ")");
       }},
      {Op::Not, [](R &r, const UOpRef &u) { return "(!" + r.operand(u, 0) + ")"; }},
      {Op::CmpLt, [](R &r, const UOpRef &u) { return infix(r, u, "<"); }},
      {Op::CmpLe, [](R &r, const UOpRef &u) { return infix(r, u, "<="); }},
      {Op::CmpEq, [](R &r, const UOpRef &u) { return infix(r, u, "=="); }},
      {Op::CmpNe, [](R &r, const UOpRef &u) { return infix(r, u, "!="); }},
      {Op::MulAdd, [](R &r, const UOpRef &u) {
         return fused(r, u->dtype, r.operand(u, 0), r.operand(u, 1), r.operand(u, 2));
       }},
      {Op::Where, [](R &r, const UOpRef &u) {
         return "(" + r.operand(u, 0) + " ? " + r.operand(u, 1) + " : " + r.operand(u, 2) + ")";
       }},
    };
    rows.merge(math_rows());
    return rows;
  }();
  return t;
}

}  // namespace loom::renderer
