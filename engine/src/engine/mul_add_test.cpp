// The multiply-add pass (codegen/mul_add.h): a float32 or float64 sum of
// products folds each product with one rounding where the target has FMA,
// and the values are those of fmaf applied in loop order.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "codegen/pipeline.h"
#include "engine/testing/extern_gemm.h"
#include "engine/testing/program.h"
#include "engine/testing/values.h"
#include "loom/tensor.h"
#include "renderer/c_renderer.h"

namespace loom {
namespace {

using uop::Op;
using testing::program_of;

// The folds of the program's reductions.
std::vector<Op> folds(const codegen::KernelSpec &p) {
  std::vector<Op> f;
  for (auto &u : p.uops)
    if (u->op == Op::Reduce) f.push_back(u->arg_as<uop::ReduceArg>().op);
  return f;
}

bool all(const std::vector<Op> &ops, Op op) {
  return !ops.empty() && std::all_of(ops.begin(), ops.end(), [&](Op o) { return o == op; });
}

TEST(MulAdd, ASumOfProductsFoldsWithMulAddWhereTheTargetHasIt) {
  if (testing::no_opt()) GTEST_SKIP() << "LOOM_NOOPT=1 turns the pass off";
  const Tensor a = Tensor::randn({8, 40}).realize(), b = Tensor::randn({40, 32}).realize();
  codegen::Target fma;
  ASSERT_TRUE(fma.fma) << "the C target's defaults are AVX-512's, FMA included";
  const codegen::KernelSpec fused = program_of(a.matmul(b), fma);
  EXPECT_TRUE(all(folds(fused), Op::MulAdd));
  EXPECT_NE(renderer::render_c(fused).find("loom_vfmaf"), std::string::npos);  // vector lanes

  codegen::Target plain;
  plain.fma = false;
  const codegen::KernelSpec unfused = program_of(a.matmul(b), plain);
  EXPECT_TRUE(all(folds(unfused), Op::Add));
  EXPECT_EQ(renderer::render_c(unfused).find("fma"), std::string::npos);
  EXPECT_EQ(unfused.work, fused.work) << "a multiply and an add per term either way";

  // float64 is scalar: C's fma. A float16 product rounds to float16 before the sum: no fusion.
  const Tensor a64 = a.cast(DType::Float64), d = a64.mul(a64).sum({1});
  const codegen::KernelSpec f64 = program_of(d, fma);
  EXPECT_TRUE(all(folds(f64), Op::MulAdd));
  EXPECT_NE(renderer::render_c(f64).find("fma("), std::string::npos);
  const Tensor a16 = a.cast(DType::Float16).realize(), h = a16.mul(a16).sum({1});
  const std::vector<Op> half_folds = folds(program_of(h, fma));
  EXPECT_FALSE(half_folds.empty());
  for (Op o : half_folds) EXPECT_NE(o, Op::MulAdd);
}

// a @ b by loops in k order, each term folded as the target folds it.
std::vector<float> matmul_in_order(const std::vector<float> &a, const std::vector<float> &b, int64_t m, int64_t k,
                                   int64_t n, bool fused) {
  std::vector<float> out(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      float acc = 0.0f;
      for (int64_t x = 0; x < k; x++) {
        const float p = a[static_cast<size_t>(i * k + x)], q = b[static_cast<size_t>(x * n + j)];
        acc = testing::add_product(acc, p, q, fused);
      }
      out[static_cast<size_t>(i * n + j)] = acc;
    }
  return out;
}

TEST(MulAdd, AGeneratedMatmulIsFmafInLoopOrderBitForBit) {
  const int64_t m = 7, k = 53, n = 40;  // vector lanes and a scalar tail
  const Tensor a = Tensor::randn({m, k}).realize(), b = Tensor::randn({k, n}).realize();
  const std::vector<float> got = [&] {
    testing::ExternGemm generated(false);
    return testing::float_values(a.matmul(b));
  }();
  const bool fused = testing::fused_multiply_add();
  const std::vector<float> av = testing::float_values(a), bv = testing::float_values(b);
  const std::vector<float> want = matmul_in_order(av, bv, m, k, n, fused);
  ASSERT_EQ(got.size(), want.size());
  EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0);
  // The check tells the two apart: some element's bits differ between them.
  EXPECT_NE(want, matmul_in_order(av, bv, m, k, n, !fused));
}

}  // namespace
}  // namespace loom
