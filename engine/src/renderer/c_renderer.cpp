// The C target: kernels are
//   void <name>(void **bufs, int64_t start, int64_t end)
// where [start, end) is the slice of the outermost loop this call runs; bufs
// holds the buffers, then a pointer to each runtime scalar's value.
#include "renderer/c_renderer.h"

#include "knobs/knobs.h"
#include "renderer/c_library.h"
#include "renderer/c_vector.h"
#include "renderer/cstyle.h"

namespace loom::renderer {

namespace {

class CRenderer : public CStyleRenderer {
 public:
  const char *reg_type(DType d) const override { return d == DType::Bool ? "_Bool" : CStyleRenderer::reg_type(d); }

  std::string header() override {
    const codegen::KernelSpec &p = program();
    std::string h = "void " + p.name + "(void **bufs, int64_t start, int64_t end) {\n";
    for (size_t i = 0; i < p.buf_dtypes.size(); i++) {
      const std::string c = i ? "const " : "", t = mem_type(p.buf_dtypes[i]);
      h += "  " + c + t + " *restrict data" + std::to_string(i) + " = (" + c + t + " *)bufs[" + std::to_string(i) + "];\n";
    }
    for (size_t j = 0; j < p.vars.size(); j++) {
      const std::string t = reg_type(p.vars[j]->dtype);
      h += "  const " + t + " " + var_name(p.vars[j]) + " = *(const " + t + " *)bufs[" +
           std::to_string(p.buf_dtypes.size() + j) + "];\n";
    }
    if (!p.global_range) h += "  (void)start; (void)end;\n";
    return h;
  }

  std::string loop(const UOpRef &range, const std::string &r) override {
    if (range == program().global_range) return "for (int64_t " + r + " = start; " + r + " < end; " + r + "++) {";
    return "for (int64_t " + r + " = 0; " + r + " < " + std::to_string(static_cast<int64_t>(range->src[0]->const_value())) +
           "; " + r + "++) {";
  }

  std::string vector_statement(const UOpRef &u) override { return c_vector_statement(*this, u); }

 protected:
  // Gates and selects without branches (a mask that changes from element to
  // element mispredicts nothing): a gated load reads element 0 where its gate
  // is off (every buffer holds at least 64 bytes, runtime/cpu/buffer_pool.cpp)
  // and selects 0 there; floats select through loom_self (the compiler does
  // not turn ?: on floats into selects). Vector lanes select likewise
  // (c_vector.h).
  const Table &expressions() const override {
    static const Table t = [] {
      Table e = expression_rules();
      e[Op::Load] = [](CStyleRenderer &r, const UOpRef &u) {
        const std::string buf = r.buffer(u->src[0]->arg_as<int64_t>());
        if (u->src.size() <= 2) return r.load(u->src[0]->dtype, buf + "[" + r.operand(u, 1) + "]");
        const std::string g = r.operand(u, 2);
        const std::string v = r.load(u->src[0]->dtype, buf + "[" + g + " ? " + r.operand(u, 1) + " : 0]");
        return select(r.reg_type(u->dtype), g, v, "0");
      };
      e[Op::Where] = [](CStyleRenderer &r, const UOpRef &u) {
        return select(r.reg_type(u->dtype), r.operand(u, 0), r.operand(u, 1), r.operand(u, 2));
      };
      return e;
    }();
    return t;
  }

 private:
  // c ? a : b with both sides evaluated.
  static std::string select(const std::string &type, const std::string &c, const std::string &a, const std::string &b) {
    if (type == "float") return "loom_self(" + c + ", " + a + ", " + b + ")";
    return "({ " + type + " loom_a = " + a + ", loom_b = " + b + "; " + c + " ? loom_a : loom_b; })";
  }
};

}  // namespace

std::string render_c(const codegen::KernelSpec &p) { return p.library ? render_c_library(p) : CRenderer().render(p); }

const std::string &c_prelude() {
  static const std::string s = std::string(R"(#include <math.h>
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
/* c ? a : b without a branch (the compiler does not turn ?: on floats into
   selects); loom_vsel<w> is its vector form. */
static inline __attribute__((always_inline)) float loom_self(int32_t c, float a, float b) {
  union { float f; int32_t i; } x = {a}, y = {b}, r;
  r.i = (x.i & -c) | (y.i & ~-c);
  return r.f;
}
/* a > b ? a : b is one maxss (minss); only a NaN in a branches. */
static inline __attribute__((always_inline)) float loom_maxf(float a, float b) { return (a != a || a > b) ? a : b; }
static inline __attribute__((always_inline)) float loom_minf(float a, float b) { return (a != a || a < b) ? a : b; }
/* The polynomials of exp and erf, shared by their scalar and vector forms
   (c_vector.h): the same constants in the same order. */
#define LOOM_EXPF_POLY(p, r)     \
  p = p * r + 1.3981999507e-3f;  \
  p = p * r + 8.3334519073e-3f;  \
  p = p * r + 4.1665795894e-2f;  \
  p = p * r + 1.6666665459e-1f;  \
  p = p * r + 5.0000001201e-1f
#define LOOM_ERFF_POLY(p, s)             \
  p = p * s - 8.034846396185458e-04f;    \
  p = p * s + 5.191218573600054e-03f;    \
  p = p * s - 2.685539983212948e-02f;    \
  p = p * s + 1.128362566232681e-01f;    \
  p = p * s - 3.761262893676758e-01f;    \
  p = p * s + 1.128379225730896f
#define LOOM_ERFC_POLY(q, t) \
  q = q * t - 0.82215223f;   \
  q = q * t + 1.48851587f;   \
  q = q * t - 1.13520398f;   \
  q = q * t + 0.27886807f;   \
  q = q * t - 0.18628806f;   \
  q = q * t + 0.09678418f;   \
  q = q * t + 0.37409196f;   \
  q = q * t + 1.00002368f;   \
  q = q * t - 1.26551223f
/* exp for float, branch-free so an unrolled group vectorizes: x = k ln2 + r
   with |r| <= ln2/2 (k rounded by adding 1.5 * 2^23, ln2 in two parts), exp(r)
   by Cephes' expf polynomial, then 2^k applied in two factors so a subnormal
   result rounds once. Within 1 ulp of the exact result; exact at 0, inf at
   x > 88.7229, 0 below -103.98, NaN for NaN. */
static inline float loom_expf(float x) {
  float c = loom_self(x > 88.8f, 88.8f, x);
  c = loom_self(c < -104.0f, -104.0f, c);
  c = loom_self(c != c, 0.0f, c);
  union { float f; int32_t i; } kb = {c * 1.44269502f + 12582912.0f};
  const int32_t k = kb.i - 0x4b400000, k1 = k >> 1, k2 = k - k1;
  const float kf = kb.f - 12582912.0f;
  float r = c - kf * 0.693145752f;
  r = r - kf * 1.42860677e-06f;
  float p = 1.9875691500e-4f;
  LOOM_EXPF_POLY(p, r);
  p = p * (r * r) + r + 1.0f;
  union { int32_t i; float f; } s1 = {(k1 + 127) << 23}, s2 = {(k2 + 127) << 23};
  return loom_self(x != x, x, (p * s1.f) * s2.f);
}
/* always_inline: this body is past the inliner's -O2 size limit, which left
   a call per element (loom_verff<w> is the vector form).
   erf for float, branch-free like loom_expf. |x| < 1: x P(x^2), P a degree-6
   least-squares fit of erf(x)/x in x^2 on [0, 1] (within 3 ulp); otherwise
   1 - t exp(R(t) - x^2) with t = 1 / (1 + |x|/2) and R the Chebyshev-fitted
   polynomial of Numerical Recipes' erfc (its relative error under 1.2e-7;
   within 2 ulp of erf here), given x's sign. +-1 at +-inf, NaN for NaN. */
static inline __attribute__((always_inline)) float loom_erff(float x) {
  const float s = x * x;
  float p = 7.933493907330558e-05f;
  LOOM_ERFF_POLY(p, s);
  union { float f; int32_t i; } a = {x};
  const int32_t sign = a.i & (int32_t)0x80000000;
  a.i &= 0x7fffffff;
  const float t = 1.0f / (1.0f + 0.5f * a.f);
  float q = 0.17087277f;
  LOOM_ERFC_POLY(q, t);
  union { float f; int32_t i; } big = {1.0f - t * loom_expf(q - s)};
  big.i |= sign;
  return loom_self(a.f < 1.0f, x * p, big.f);
}
/* log for float, branch-free: x = m 2^e with m in [sqrt(1/2), sqrt(2))
   (a subnormal x scaled by 2^23 first), log(m) by Cephes' logf polynomial in
   m - 1, e ln2 added in two parts. Within 1 ulp of the exact result (0.78
   over every 97th float); -inf at +-0, inf at inf, NaN below 0 and for NaN. */
#define LOOM_LOGF_POLY(p, m)    \
  p = p * m - 1.1514610310e-1f; \
  p = p * m + 1.1676998740e-1f; \
  p = p * m - 1.2420140846e-1f; \
  p = p * m + 1.4249322787e-1f; \
  p = p * m - 1.6668057665e-1f; \
  p = p * m + 2.0000714765e-1f; \
  p = p * m - 2.4999993993e-1f; \
  p = p * m + 3.3333331174e-1f
static inline __attribute__((always_inline)) float loom_logf(float x) {
  union { float f; int32_t i; } u = {x};
  const int32_t sub = u.i < 0x00800000;
  u.f = loom_self(sub, x * 8388608.0f, x);
  const int32_t e = ((u.i >> 23) & 0xff) - 126 - (-sub & 23);
  u.i = (u.i & 0x007fffff) | 0x3f000000;
  const int32_t lo = u.f < 0.707106781186547524f;
  const float ef = (float)(e - lo);
  const float m = loom_self(lo, u.f + u.f, u.f) - 1.0f;
  const float z = m * m;
  float p = 7.0376836292e-2f;
  LOOM_LOGF_POLY(p, m);
  float r = m + ((p * m * z + ef * -2.12194440e-4f) - 0.5f * z);
  r = r + ef * 0.693359375f;
  r = loom_self(x == __builtin_inff(), x, r);
  r = loom_self(x == 0.0f, -__builtin_inff(), r);
  return loom_self((x < 0.0f) | (x != x), __builtin_nanf(""), r);
}
/* tanh for float, branch-free: |x| < 0.625 by Cephes' tanhf polynomial
   x + x s P(s), s = x^2; otherwise 1 - 2 / (exp(2|x|) + 1) with x's sign.
   Within 1.31 ulp of the exact result; +-1 at +-inf, NaN for NaN. */
#define LOOM_TANHF_POLY(p, s)    \
  p = p * s + 2.06390887954e-2f; \
  p = p * s - 5.37397155531e-2f; \
  p = p * s + 1.33314422036e-1f; \
  p = p * s - 3.33332819422e-1f
static inline __attribute__((always_inline)) float loom_tanhf(float x) {
  union { float f; int32_t i; } a = {x};
  const int32_t sign = a.i & (int32_t)0x80000000;
  a.i &= 0x7fffffff;
  const float s = x * x;
  float p = -5.70498872745e-3f;
  LOOM_TANHF_POLY(p, s);
  union { float f; int32_t i; } big = {1.0f - 2.0f / (loom_expf(a.f + a.f) + 1.0f)};
  big.i |= sign;
  return loom_self(a.f < 0.625f, p * s * x + x, big.f);
}
static inline double loom_maxd(double a, double b) { return (a != a || a > b) ? a : b; }
static inline double loom_mind(double a, double b) { return (a != a || a < b) ? a : b; }
static inline int64_t loom_ipow(int64_t a, int64_t b) {
  if (b < 0) return a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0;
  uint64_t r = 1, x = (uint64_t)a;
  while (b) { if (b & 1) r *= x; x *= x; b >>= 1; }
  return (int64_t)r;
}
)") + c_vector_prelude();
  return s;
}

std::vector<std::string> c_flags() {
  return {"-O2",      "-fno-tree-loop-vectorize", "-fno-tree-slp-vectorize", "-march=" + knobs::march(), "-mprefer-vector-width=512",
          "-fwrapv",  "-ffp-contract=off",        "-fno-math-errno",         "-std=gnu11"};
}

bool machine_runs(const std::string &march) {
#if defined(__x86_64__) && defined(__GNUC__)
  // Feature by feature: clang 14 knows no level names in __builtin_cpu_supports.
  const bool v2 = __builtin_cpu_supports("sse4.2") && __builtin_cpu_supports("popcnt");
  const bool v3 = v2 && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                  __builtin_cpu_supports("bmi") && __builtin_cpu_supports("bmi2");
  const bool v4 = v3 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                  __builtin_cpu_supports("avx512cd") && __builtin_cpu_supports("avx512dq") &&
                  __builtin_cpu_supports("avx512vl");
  if (march == "x86-64-v2") return v2;
  if (march == "x86-64-v3") return v3;
  if (march == "x86-64-v4") return v4;
#endif
  return true;
}

}  // namespace loom::renderer
