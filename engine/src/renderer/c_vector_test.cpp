// The prelude's vector functions compute, lane for lane, the bits of their
// scalar counterparts: a kernel gives the same values vectorized or not.
#include <gtest/gtest.h>

#include <string>

#include "renderer/c_renderer.h"
#include "renderer/testing/compile_check.h"

namespace loom::renderer {
namespace {

// For every lane count, compares each vector function with its scalar
// counterpart over a sweep of float bit patterns (every sign, exponent and
// a spread of mantissas) and special values; prints the mismatches.
const char *kCheck = R"(
#include <stdio.h>
#include <string.h>
static uint32_t bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static int same(float a, float b) { return bits(a) == bits(b) || (a != a && b != b); }
static float from_bits(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
#define CHECK(W)                                                                              \
  for (uint64_t i = 0; i + W <= n; i += W) {                                                  \
    loom_v##W##f x = loom_vload##W##f(xs + i), y = loom_vload##W##f(ys + i);                  \
    loom_v##W##f e = loom_vexpf##W(x), r = loom_verff##W(x), mx = loom_vmaxf##W(x, y),        \
                 mn = loom_vminf##W(x, y), s = loom_vsel##W(x < y, x, y), lg = loom_vlogf##W(x), \
                 th = loom_vtanhf##W(x), fm = loom_vfmaf##W(x, y, mn);                        \
    for (int l = 0; l < W; l++) {                                                             \
      const float a = xs[i + l], b = ys[i + l];                                               \
      bad += !same(e[l], loom_expf(a)) + !same(r[l], loom_erff(a)) + !same(mx[l], loom_maxf(a, b)) + \
             !same(mn[l], loom_minf(a, b)) + !same(s[l], loom_self(a < b, a, b)) +            \
             !same(lg[l], loom_logf(a)) + !same(th[l], loom_tanhf(a)) +                       \
             !same(fm[l], fmaf(a, b, loom_minf(a, b)));                                      \
    }                                                                                         \
  }
int main(void) {
  static float xs[1 << 21], ys[1 << 21];
  const float special[] = {0.0f, -0.0f, 1.0f / 0.0f, -1.0f / 0.0f, 0.0f / 0.0f, 88.72283f, 88.72284f, 88.8f, -104.0f,
                           -103.9720f, 1e-30f, -1e-40f, 1.0f, -1.0f, 0.99999994f, 0.625f};
  uint64_t n = 0;
  for (uint64_t u = 0; u < (1ull << 32); u += 2053) xs[n++] = from_bits((uint32_t)u);
  for (int k = 0; k < 16; k++) xs[n++] = special[k];
  for (uint64_t i = 0; i < n; i++) ys[i] = xs[(i * 7919) % n];
  n -= n % 16;
  long bad = 0;
  CHECK(4)
  CHECK(8)
  CHECK(16)
  printf("%ld mismatches over %llu values\n", bad, (unsigned long long)n);
  return bad != 0;
}
)";

TEST(CVector, VectorMathIsTheScalarMathLaneForLaneAtEveryWidthTheMachineRuns) {
  for (const std::string &march : testing::marches_run_here()) {
    SCOPED_TRACE(march.empty() ? "the kernels' flags" : march);
    const testing::CheckRun r = testing::build_and_run(c_prelude() + kCheck, march);
    ASSERT_TRUE(r.built) << r.output;
    EXPECT_EQ(r.status, 0) << r.output;
    EXPECT_EQ(r.output.rfind("0 mismatches over ", 0), 0u) << r.output;
  }
}

}  // namespace
}  // namespace loom::renderer
