#include "renderer/c_vector.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "codegen/vectorize.h"
#include "loom/error.h"

namespace loom::renderer {

namespace {

using R = CStyleRenderer;

std::string vtype(DType d, int64_t w) { return "loom_v" + std::to_string(w) + (d == DType::Bool ? "i" : "f"); }

// Operand i of a vector UOp: a scalar operand is broadcast.
std::string operand(R &r, const UOpRef &u, size_t i, int64_t w) {
  const UOpRef &s = u->src[i];
  const std::string x = r.name_of(s);
  if (codegen::lanes(*s) > 1) return x;
  const std::string n = std::to_string(w);
  return s->dtype == DType::Bool ? "loom_splat" + n + "i(-(int32_t)(" + x + "))" : "loom_splat" + n + "f(" + x + ")";
}

// A VECTORIZE of lanes of at most two vectors of its width: one shuffle.
std::optional<std::string> lanes_shuffled(R &r, const UOpRef &u, int64_t w) {
  std::vector<UOpRef> from;  // the vectors, in order of first use
  std::string picks;
  for (const UOpRef &s : u->src) {
    if (s->op != Op::Gep || codegen::lanes(*s->src[0]) != w) return std::nullopt;
    if (std::find(from.begin(), from.end(), s->src[0]) == from.end()) from.push_back(s->src[0]);
    const int64_t v = std::find(from.begin(), from.end(), s->src[0]) - from.begin();
    if (v > 1) return std::nullopt;
    picks += ", " + std::to_string(v * w + s->arg_as<int64_t>());
  }
  return "LOOM_VSHUF" + std::to_string(w) + "(" + r.name_of(from[0]) + ", " + r.name_of(from.back()) + picks + ")";
}

std::string expression(R &r, const UOpRef &u, int64_t w) {
  const std::string n = std::to_string(w);
  auto a = [&](size_t i) { return operand(r, u, i, w); };
  auto infix = [&](const char *op) { return "(" + a(0) + " " + op + " " + a(1) + ")"; };
  auto call = [&](const std::string &f) {
    std::string s = f + n + "(";
    for (size_t i = 0; i < u->src.size(); i++) s += (i ? ", " : "") + a(i);
    return s + ")";
  };
  switch (u->op) {
    case Op::Load: {  // a gate shared by every lane: 0 where it is off
      const std::string ld = "loom_vload" + n + "f(&" + r.buffer(u->src[0]->arg_as<int64_t>()) + "[" + r.operand(u, 1) + "])";
      return u->src.size() > 2 ? "(" + r.operand(u, 2) + " ? " + ld + " : loom_splat" + n + "f(0.0f))" : ld;
    }
    case Op::Vectorize: {
      if (auto shuffle = lanes_shuffled(r, u, w)) return *shuffle;
      std::string s = "(" + vtype(u->dtype, w) + "){";
      for (size_t i = 0; i < u->src.size(); i++) {
        const std::string x = r.name_of(u->src[i]);
        s += (i ? ", " : "") + (u->dtype == DType::Bool ? "-(int32_t)(" + x + ")" : x);
      }
      return s + "}";
    }
    case Op::Add: return infix("+");
    case Op::Sub: return infix("-");
    case Op::Mul: return infix("*");
    case Op::Div: return infix("/");
    case Op::Neg: return "(-" + a(0) + ")";
    case Op::Recip: return "(1.0f / " + a(0) + ")";
    case Op::CmpLt: return infix("<");
    case Op::CmpLe: return infix("<=");
    case Op::CmpEq: return infix("==");
    case Op::CmpNe: return infix("!=");
    case Op::And: return infix("&");
    case Op::Or: return infix("|");
    case Op::Not: return "(~" + a(0) + ")";
    case Op::Cast:  // bool -> float (the mask's low bit), float -> bool (x != 0)
      return u->dtype == DType::Bool ? "(" + a(0) + " != 0.0f)" : "__builtin_convertvector(" + a(0) + " & 1, loom_v" + n + "f)";
    default:  // the prelude's vector function of the op's row (uop/ops.def)
      LOOM_CHECK(*uop::op_info(u->op).vector, std::string("no C vector form for ") + uop::op_name(u->op));
      return call(uop::op_info(u->op).vector);
  }
}

}  // namespace

std::string c_vector_statement(R &r, const UOpRef &u) {
  const int64_t w = codegen::lanes(*u);
  const std::string n = std::to_string(w);
  switch (u->op) {
    case Op::Gep: {
      std::string e = r.name_of(u->src[0]) + "[" + std::to_string(u->arg_as<int64_t>()) + "]";
      if (u->dtype == DType::Bool) e = "(" + e + " != 0)";
      // A lane of a value (not of an accumulator, which later statements
      // change) is read where it is used: the lanes a shuffle picks need no statement.
      if (u->src[0]->op != Op::Reduce) {
        r.bind(u, e);
        return "";
      }
      return std::string(r.reg_type(u->dtype)) + " " + r.def(u, "alu") + " = " + e + ";";
    }
    case Op::DefineAcc: {
      const UOpRef &fold = u->src[0];
      return vtype(fold->dtype, w) + " " + r.def(fold, "acc") + " = loom_splat" + n + "f(" + r.acc_identity(fold) + ");";
    }
    case Op::Reduce: {
      const std::string acc = r.name_of(u);
      const Op op = u->arg_as<uop::ReduceArg>().op;
      if (op == Op::MulAdd)  // the MUL's factors (codegen/mul_add.h), a scalar one broadcast
        return acc + " = loom_vfmaf" + n + "(" + operand(r, u->src[0], 0, w) + ", " + operand(r, u->src[0], 1, w) + ", " +
               acc + ");";
      const std::string v = r.operand(u, 0);
      if (op == Op::Add) return acc + " = " + acc + " + " + v + ";";
      return acc + " = loom_v" + std::string(op == Op::Max ? "max" : "min") + "f" + n + "(" + acc + ", " + v + ");";
    }
    case Op::Store: {
      const std::string v = r.operand(u, 2);
      const std::string st = "__builtin_memcpy(&" + r.buffer(u->src[0]->arg_as<int64_t>()) + "[" + r.operand(u, 1) + "], &" +
                             v + ", sizeof " + v + ");";
      return u->src.size() > 3 ? "if (" + r.operand(u, 3) + ") " + st : st;
    }
    default:
      return vtype(u->dtype, w) + " " + r.def(u, u->op == Op::Load ? "val" : "alu") + " = " + expression(r, u, w) + ";";
  }
}

void fill_placeholder(std::string &text, const std::string &key, const std::string &value) {
  for (size_t p = text.find(key); p != std::string::npos; p = text.find(key, p + value.size()))
    text.replace(p, key.size(), value);
}

std::string c_vector_prelude() {
  // $W lanes, $B bytes, $X the broadcast's initializers. Each function's
  // operations are its scalar counterpart's, in the same order, and the
  // polynomials the same macros (c_renderer.cpp).
  static const char *tmpl = R"(typedef float loom_v$Wf __attribute__((vector_size($B)));
typedef int32_t loom_v$Wi __attribute__((vector_size($B)));
static inline loom_v$Wf loom_splat$Wf(float x) { return (loom_v$Wf){$X}; }
static inline loom_v$Wi loom_splat$Wi(int32_t x) { return (loom_v$Wi){$X}; }
static inline loom_v$Wf loom_vload$Wf(const float *p) { loom_v$Wf v; __builtin_memcpy(&v, p, sizeof v); return v; }
#ifdef __clang__
#define LOOM_VSHUF$W(a, b, ...) __builtin_shufflevector(a, b, __VA_ARGS__)
#else
#define LOOM_VSHUF$W(a, b, ...) __builtin_shuffle(a, b, (loom_v$Wi){__VA_ARGS__})
#endif
static inline loom_v$Wf loom_vsel$W(loom_v$Wi c, loom_v$Wf a, loom_v$Wf b) {
  return (loom_v$Wf)(((loom_v$Wi)a & c) | ((loom_v$Wi)b & ~c));
}
static inline loom_v$Wf loom_vfmaf$W(loom_v$Wf a, loom_v$Wf b, loom_v$Wf c) {
#ifdef LOOM_VFMA$W
  return LOOM_VFMA$W(a, b, c);
#else
  loom_v$Wf r;
  for (int i = 0; i < $W; i++) r[i] = __builtin_fmaf(a[i], b[i], c[i]);
  return r;
#endif
}
static inline loom_v$Wf loom_vmaxf$W(loom_v$Wf a, loom_v$Wf b) { return loom_vsel$W((a != a) | (a > b), a, b); }
static inline loom_v$Wf loom_vminf$W(loom_v$Wf a, loom_v$Wf b) { return loom_vsel$W((a != a) | (a < b), a, b); }
static inline loom_v$Wf loom_vexpf$W(loom_v$Wf x) {
#ifdef LOOM_VCLAMP$W
  loom_v$Wf c = LOOM_VCLAMP$W(x, -104.0f, 88.8f);  /* a NaN becomes -104: it returns as itself below */
#else
  loom_v$Wf c = loom_vsel$W(x > 88.8f, loom_splat$Wf(88.8f), x);
  c = loom_vsel$W(c < -104.0f, loom_splat$Wf(-104.0f), c);
  c = loom_vsel$W(c != c, loom_splat$Wf(0.0f), c);
#endif
  const loom_v$Wf kb = c * 1.44269502f + 12582912.0f;
  const loom_v$Wi k = (loom_v$Wi)kb - 0x4b400000, k1 = k >> 1, k2 = k - k1;
  const loom_v$Wf kf = kb - 12582912.0f;
  loom_v$Wf r = c - kf * 0.693145752f;
  r = r - kf * 1.42860677e-06f;
  loom_v$Wf p = loom_splat$Wf(1.9875691500e-4f);
  LOOM_EXPF_POLY(p, r);
  p = p * (r * r) + r + 1.0f;
  const loom_v$Wf s1 = (loom_v$Wf)((k1 + 127) << 23), s2 = (loom_v$Wf)((k2 + 127) << 23);
  return loom_vsel$W(x != x, x, (p * s1) * s2);
}
static inline loom_v$Wf loom_verff$W(loom_v$Wf x) {
  const loom_v$Wf s = x * x;
  loom_v$Wf p = loom_splat$Wf(7.933493907330558e-05f);
  LOOM_ERFF_POLY(p, s);
  const loom_v$Wi sign = (loom_v$Wi)x & (int32_t)0x80000000;
  const loom_v$Wf a = (loom_v$Wf)((loom_v$Wi)x & 0x7fffffff);
  const loom_v$Wf t = 1.0f / (1.0f + 0.5f * a);
  loom_v$Wf q = loom_splat$Wf(0.17087277f);
  LOOM_ERFC_POLY(q, t);
  const loom_v$Wf big = (loom_v$Wf)((loom_v$Wi)(1.0f - t * loom_vexpf$W(q - s)) | sign);
  return loom_vsel$W(a < 1.0f, x * p, big);
}
static inline loom_v$Wf loom_vlogf$W(loom_v$Wf x) {
  const loom_v$Wi sub = (loom_v$Wi)x < 0x00800000;
  loom_v$Wf v = loom_vsel$W(sub, x * 8388608.0f, x);
  const loom_v$Wi e = (((loom_v$Wi)v >> 23) & 0xff) - 126 - (sub & 23);
  v = (loom_v$Wf)(((loom_v$Wi)v & 0x007fffff) | 0x3f000000);
  const loom_v$Wi lo = v < 0.707106781186547524f;
  const loom_v$Wf ef = __builtin_convertvector(e + lo, loom_v$Wf);
  const loom_v$Wf m = loom_vsel$W(lo, v + v, v) - 1.0f;
  const loom_v$Wf z = m * m;
  loom_v$Wf p = loom_splat$Wf(7.0376836292e-2f);
  LOOM_LOGF_POLY(p, m);
  loom_v$Wf r = m + ((p * m * z + ef * -2.12194440e-4f) - 0.5f * z);
  r = r + ef * 0.693359375f;
  r = loom_vsel$W(x == __builtin_inff(), x, r);
  r = loom_vsel$W(x == 0.0f, loom_splat$Wf(-__builtin_inff()), r);
  return loom_vsel$W((x < 0.0f) | (x != x), loom_splat$Wf(__builtin_nanf("")), r);
}
static inline loom_v$Wf loom_vtanhf$W(loom_v$Wf x) {
  const loom_v$Wi sign = (loom_v$Wi)x & (int32_t)0x80000000;
  const loom_v$Wf a = (loom_v$Wf)((loom_v$Wi)x & 0x7fffffff);
  const loom_v$Wf s = x * x;
  loom_v$Wf p = loom_splat$Wf(-5.70498872745e-3f);
  LOOM_TANHF_POLY(p, s);
  const loom_v$Wf big = (loom_v$Wf)((loom_v$Wi)(1.0f - 2.0f / (loom_vexpf$W(a + a) + 1.0f)) | sign);
  return loom_vsel$W(a < 0.625f, p * s * x + x, big);
}
)";
  // The fused multiply-add instructions of each width, where the -march has
  // them (x86's FMA3 and AVX-512F; GCC's and clang's builtins, as
  // immintrin.h spells them, without its ~0.1 s of parsing per unit).
  // Elsewhere loom_vfmaf<W> computes each lane's fmaf. Likewise exp's clamp
  // of its argument as x86's max and min of 4 and 8 lanes (a NaN becomes the
  // bound): below AVX-512 the three selects cost 9 of the chain kernel's ~100
  // instructions per vector, compares and blends; with AVX-512 they are
  // masked moves.
  std::string out = R"(#if defined(__x86_64__) && defined(__FMA__)
#define LOOM_VFMA4 __builtin_ia32_vfmaddps
#define LOOM_VFMA8 __builtin_ia32_vfmaddps256
#endif
#if defined(__x86_64__) && defined(__SSE__)
#define LOOM_VCLAMP4(x, lo, hi) __builtin_ia32_minps(__builtin_ia32_maxps((x), loom_splat4f(lo)), loom_splat4f(hi))
#endif
#if defined(__x86_64__) && defined(__AVX__)
#define LOOM_VCLAMP8(x, lo, hi) __builtin_ia32_minps256(__builtin_ia32_maxps256((x), loom_splat8f(lo)), loom_splat8f(hi))
#endif
#if defined(__x86_64__) && defined(__AVX512F__)
#define LOOM_VFMA16(a, b, c) __builtin_ia32_vfmaddps512_mask(a, b, c, (unsigned short)-1, 4)
#endif
)";
  for (int w : {4, 8, 16}) {
    std::string s = tmpl, x;
    for (int i = 0; i < w; i++) x += i ? ", x" : "x";
    fill_placeholder(s, "$W", std::to_string(w));
    fill_placeholder(s, "$B", std::to_string(4 * w));
    fill_placeholder(s, "$X", x);
    out += s;
  }
  return out;
}

}  // namespace loom::renderer
