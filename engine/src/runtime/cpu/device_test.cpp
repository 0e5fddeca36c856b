// The CPU device's Target: an elementwise kernel's group is one vector
// register of the -march its kernels compile for (LOOM_MARCH, or native),
// and sums of products fuse their multiply-adds where it has FMA.
#include <gtest/gtest.h>

#include "knobs/knobs.h"
#include "runtime/cpu/cpu.h"

namespace loom::runtime::cpu {
namespace {

TEST(CpuDevice, TheTargetGroupsOneVectorRegisterOfTheKernelsMarch) {
  const std::string &m = knobs::march();
  int64_t want = 0;
  if (m == "x86-64-v2") want = 16;
  if (m == "x86-64-v3") want = 32;
  if (m == "x86-64-v4") want = 64;
#if defined(__x86_64__) && defined(__GNUC__)
  if (m == "native") want = __builtin_cpu_supports("avx512f") ? 64 : __builtin_cpu_supports("avx") ? 32 : 16;
#endif
  ASSERT_NE(want, 0) << "no expectation for LOOM_MARCH=" << m;
  EXPECT_EQ(vector_bytes(), want);
  EXPECT_EQ(device().target().group_bytes, want);
  EXPECT_EQ(device().target().vector_bytes, want);
}

TEST(CpuDevice, TheTargetFusesMultiplyAddWhereTheKernelsMarchHasIt) {
  const std::string &m = knobs::march();
  int want = -1;
  if (m == "x86-64-v2") want = 0;
  if (m == "x86-64-v3" || m == "x86-64-v4") want = 1;
#if defined(__x86_64__) && defined(__GNUC__)
  if (m == "native") want = __builtin_cpu_supports("fma") ? 1 : 0;
#endif
  ASSERT_NE(want, -1) << "no expectation for LOOM_MARCH=" << m;
  EXPECT_EQ(fused_multiply_add(), want == 1);
  EXPECT_EQ(device().target().fma, want == 1);
}

}  // namespace
}  // namespace loom::runtime::cpu
