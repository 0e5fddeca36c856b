#include "renderer/c_renderer.h"

#include <cmath>
#include <cstdio>
#include <sstream>
#include <unordered_map>

#include "loom/error.h"
#include "renderer/c_library.h"

namespace loom::renderer {

using uop::Op;
using uop::UOp;
using uop::UOpRef;

namespace {

bool is_half(DType d) { return d == DType::Float16 || d == DType::BFloat16; }

// Type a value has in registers: halves compute as float.
const char *reg_type(DType d) {
  switch (d) {
    case DType::Bool: return "_Bool";
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

const char *mem_type(DType d) {
  if (d == DType::Bool) return "uint8_t";
  if (is_half(d)) return "uint16_t";
  return reg_type(d);
}

std::string render_const(const UOpRef &c) {
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

class CRenderer {
 public:
  explicit CRenderer(const codegen::Program &p) : p_(p) {}

  std::string render() {
    os_ << "void " << p_.name << "(void **bufs, int64_t start, int64_t end) {\n";
    for (size_t i = 0; i < p_.buf_dtypes.size(); i++)
      os_ << "  " << (i ? "const " : "") << mem_type(p_.buf_dtypes[i]) << " *restrict data" << i << " = ("
          << (i ? "const " : "") << mem_type(p_.buf_dtypes[i]) << " *)bufs[" << i << "];\n";
    if (!p_.global_range) os_ << "  (void)start; (void)end;\n";
    int depth = 1;
    for (auto &l : p_.lines) {
      if (l.kind == codegen::LineKind::Close) {
        depth--;
        line(depth, "}");
        continue;
      }
      line(depth, statement(l));
      if (l.kind == codegen::LineKind::Open) depth++;
    }
    os_ << "}\n";
    return os_.str();
  }

 private:
  void line(int depth, const std::string &s) { os_ << std::string(2 * depth, ' ') << s << "\n"; }

  std::string name_of(const UOpRef &u) {
    if (u->op == Op::Const) return render_const(u);
    auto it = names_.find(u.get());
    LOOM_CHECK(it != names_.end(), std::string("operand not rendered: ") + uop::op_name(u->op));
    return it->second;
  }

  std::string def(const UOpRef &u, const std::string &prefix) {
    std::string n = prefix + std::to_string(counter_++);
    names_[u.get()] = n;
    return n;
  }

  std::string statement(const codegen::Line &l) {
    const UOpRef &u = l.u;
    switch (l.kind) {
      case codegen::LineKind::Open: {
        std::string r = "r" + std::to_string(u->arg_as<int64_t>());
        names_[u.get()] = r;
        if (u == p_.global_range) return "for (int64_t " + r + " = start; " + r + " < end; " + r + "++) {";
        return "for (int64_t " + r + " = 0; " + r + " < " + std::to_string(static_cast<int64_t>(u->src[0]->const_value())) +
               "; " + r + "++) {";
      }
      case codegen::LineKind::AccInit: {
        std::string a = def(u, "acc");
        return std::string(reg_type(u->dtype)) + " " + a + " = " + acc_identity(u) + ";";
      }
      case codegen::LineKind::AccUpdate: {
        std::string a = name_of(u), v = name_of(u->src[0]);
        return a + " = " + combine(u->arg_as<uop::ReduceArg>().op, u->dtype, a, v, /*round=*/false) + ";";
      }
      case codegen::LineKind::Store: {
        DType d = u->src[2]->dtype;
        std::string v = name_of(u->src[2]);
        std::string m = d == DType::Float16 ? "loom_f2h(" + v + ")" : d == DType::BFloat16 ? "loom_f2bf(" + v + ")" : v;
        std::string st = "data" + std::to_string(u->src[0]->arg_as<int64_t>()) + "[" + name_of(u->src[1]) + "] = " + m + ";";
        return u->src.size() > 3 ? "if (" + name_of(u->src[3]) + ") " + st : st;
      }
      case codegen::LineKind::Value: {
        std::string expr = value_expr(u);
        std::string n = def(u, u->op == Op::Load ? "val" : "alu");
        return std::string(reg_type(u->dtype)) + " " + n + " = " + expr + ";";
      }
      case codegen::LineKind::Close: break;
    }
    return "";
  }

  std::string acc_identity(const UOpRef &red) {
    Op op = red->arg_as<uop::ReduceArg>().op;
    DType d = red->dtype;
    if (op == Op::Add) return is_float(d) ? "0.0f" : "0";
    if (op == Op::Mul) return is_float(d) ? "1.0f" : "1";
    bool mx = op == Op::Max;
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

  // Rounds a float register to the half type's precision, as torch rounds every op's result.
  static std::string rounded(DType d, const std::string &e) {
    if (d == DType::Float16) return "loom_rh(" + e + ")";
    if (d == DType::BFloat16) return "loom_rbf(" + e + ")";
    return e;
  }
  // Integer results are truncated back to their width (wrap-around, as in torch).
  static std::string wrapped(DType d, const std::string &e) {
    if (is_float(d)) return rounded(d, e);
    if (d == DType::Bool) return "(_Bool)(" + e + ")";
    return "(" + std::string(reg_type(d)) + ")(" + e + ")";
  }

  std::string combine(Op op, DType d, const std::string &a, const std::string &b, bool round) {
    std::string e;
    bool f = is_float(d), dbl = d == DType::Float64;
    switch (op) {
      case Op::Add: e = d == DType::Bool ? "(" + a + " | " + b + ")" : "(" + a + " + " + b + ")"; break;
      case Op::Sub: e = "(" + a + " - " + b + ")"; break;
      case Op::Mul: e = d == DType::Bool ? "(" + a + " & " + b + ")" : "(" + a + " * " + b + ")"; break;
      case Op::Div: e = "(" + a + " / " + b + ")"; break;
      case Op::IDiv: e = "(" + a + " / " + b + ")"; break;
      case Op::Mod: e = f ? std::string(dbl ? "fmod(" : "fmodf(") + a + ", " + b + ")" : "(" + a + " % " + b + ")"; break;
      case Op::Max: e = f ? std::string(dbl ? "loom_maxd(" : "loom_maxf(") + a + ", " + b + ")" : "(" + a + " > " + b + " ? " + a + " : " + b + ")"; break;
      case Op::Min: e = f ? std::string(dbl ? "loom_mind(" : "loom_minf(") + a + ", " + b + ")" : "(" + a + " < " + b + " ? " + a + " : " + b + ")"; break;
      case Op::Pow: e = f ? std::string(dbl ? "pow(" : "powf(") + a + ", " + b + ")" : "loom_ipow(" + a + ", " + b + ")"; break;
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

  std::string value_expr(const UOpRef &u) {
    DType d = u->dtype;
    bool dbl = d == DType::Float64;
    auto s = [&](int i) { return name_of(u->src[i]); };
    auto fn = [&](const char *fname) { return rounded(d, std::string(fname) + (dbl ? "" : "f") + "(" + s(0) + ")"); };
    switch (u->op) {
      case Op::Load: {
        DType ld = u->src[0]->dtype;
        std::string ptr = "data" + std::to_string(u->src[0]->arg_as<int64_t>()) + "[" + s(1) + "]";
        std::string v = ld == DType::Float16 ? "loom_h2f(" + ptr + ")" : ld == DType::BFloat16 ? "loom_bf2f(" + ptr + ")"
                        : ld == DType::Bool ? "(_Bool)" + ptr : ptr;
        return u->src.size() > 2 ? "(" + s(2) + " ? " + v + " : 0)" : v;
      }
      case Op::Reduce: return name_of(u);
      case Op::Cast: {
        DType from = u->src[0]->dtype;
        if (d == DType::Bool) return "(" + s(0) + " != 0)";
        if (is_half(d)) return rounded(d, "(float)" + s(0));
        if (!is_float(d) && is_float(from))  // float -> int goes through int64 like torch's conversion
          return "(" + std::string(reg_type(d)) + ")(int64_t)" + s(0);
        return "(" + std::string(reg_type(d)) + ")" + s(0);
      }
      case Op::Neg: return is_float(d) ? "(-" + s(0) + ")" : wrapped(d, "-" + s(0));
      case Op::Abs:
        return is_float(d) ? std::string(dbl ? "fabs(" : "fabsf(") + s(0) + ")"
                           : wrapped(d, "(" + s(0) + " < 0 ? -" + s(0) + " : " + s(0) + ")");
      case Op::Exp: return fn("exp");
      case Op::Log: return fn("log");
      case Op::Sqrt: return fn("sqrt");
      case Op::Floor: return fn("floor");
      case Op::Sin: return fn("sin");
      case Op::Cos: return fn("cos");
      case Op::Tanh: return fn("tanh");
      case Op::Erf: return fn("erf");
      case Op::Recip: return rounded(d, std::string(dbl ? "(1.0 / " : "(1.0f / ") + s(0) + ")");
      case Op::Not: return "(!" + s(0) + ")";
      case Op::CmpLt: return "(" + s(0) + " < " + s(1) + ")";
      case Op::CmpLe: return "(" + s(0) + " <= " + s(1) + ")";
      case Op::CmpEq: return "(" + s(0) + " == " + s(1) + ")";
      case Op::CmpNe: return "(" + s(0) + " != " + s(1) + ")";
      case Op::Where: return "(" + s(0) + " ? " + s(1) + " : " + s(2) + ")";
      default: return combine(u->op, d, s(0), s(1), true);
    }
  }

  const codegen::Program &p_;
  std::ostringstream os_;
  std::unordered_map<const UOp *, std::string> names_;
  int counter_ = 0;
};

}  // namespace

std::string render_c(const codegen::Program &p) { return p.library ? render_c_library(p) : CRenderer(p).render(); }

const std::string &c_prelude() {
  static const std::string s = R"(#include <math.h>
#include <stdint.h>
static inline float loom_h2f(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ff, bits;
  if (e == 0) { float f = ldexpf((float)m, -24); return sign ? -f : f; }
  bits = e == 31 ? (sign | 0x7f800000u | (m << 13)) : (sign | ((e + 112) << 23) | (m << 13));
  union { uint32_t u; float f; } c = {bits}; return c.f;
}
static inline uint16_t loom_f2h(float f) {
  union { float f; uint32_t u; } c = {f};
  uint32_t x = c.u, sign = (x >> 16) & 0x8000u, a = x & 0x7fffffffu;
  if (a >= 0x7f800000u) return (uint16_t)(sign | (a > 0x7f800000u ? 0x7e00u : 0x7c00u));
  if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);
  if (a < 0x38800000u) { union { uint32_t u; float f; } d = {a}; d.f += 0.5f; return (uint16_t)(sign | (d.u - 0x3f000000u)); }
  a += 0xc8000fffu + ((a >> 13) & 1u); return (uint16_t)(sign | (a >> 13));
}
static inline float loom_bf2f(uint16_t h) { union { uint32_t u; float f; } c = {(uint32_t)h << 16}; return c.f; }
static inline uint16_t loom_f2bf(float f) {
  union { float f; uint32_t u; } c = {f};
  if ((c.u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((c.u >> 16) | 0x40u);
  c.u += 0x7fffu + ((c.u >> 16) & 1u); return (uint16_t)(c.u >> 16);
}
static inline float loom_rh(float x) { return loom_h2f(loom_f2h(x)); }
static inline float loom_rbf(float x) { return loom_bf2f(loom_f2bf(x)); }
static inline float loom_maxf(float a, float b) { return (a != a || a > b) ? a : b; }
static inline float loom_minf(float a, float b) { return (a != a || a < b) ? a : b; }
static inline double loom_maxd(double a, double b) { return (a != a || a > b) ? a : b; }
static inline double loom_mind(double a, double b) { return (a != a || a < b) ? a : b; }
static inline int64_t loom_ipow(int64_t a, int64_t b) {
  if (b < 0) return a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0;
  uint64_t r = 1, x = (uint64_t)a;
  while (b) { if (b & 1) r *= x; x *= x; b >>= 1; }
  return (int64_t)r;
}
)";
  return s;
}

}  // namespace loom::renderer
