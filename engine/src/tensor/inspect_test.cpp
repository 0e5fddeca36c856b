// kernels_of: what a realize would run, shown without running it.
#include "loom/inspect.h"

#include <gtest/gtest.h>

#include "engine/realize.h"
#include "loom/backends.h"
#include "runtime/device.h"
#include "schedule/schedule.h"

namespace loom {
namespace {

TEST(KernelsOf, ShowsAFusedKernelAndRunsNothing) {
  Tensor x = Tensor::arange(8, DType::Float32).realize();
  Tensor y = x.mul(2.0).add(1.0).exp();
  reset_run_stats();
  const std::vector<KernelInfo> ks = kernels_of({y});
  ASSERT_EQ(ks.size(), 1u);  // mul, add and exp fuse
  EXPECT_EQ(ks[0].name, "E_8");
  ASSERT_EQ(ks[0].buffers.size(), 2u);
  EXPECT_NE(ks[0].buffers[0].find("[8] float32"), std::string::npos);
  EXPECT_NE(ks[0].ast.find("EXP"), std::string::npos);
  EXPECT_NE(ks[0].c_source.find("exp"), std::string::npos);
  EXPECT_NE(ks[0].cuda_source.find("__global__"), std::string::npos);
  EXPECT_NE(ks[0].bound.find("v0=2 float32"), std::string::npos);  // the 2.0 is a runtime scalar
  EXPECT_EQ(ks[0].library, "");
  EXPECT_EQ(run_stats().kernels_run, 0);
  EXPECT_EQ(run_stats().kernels_compiled, 0);
  EXPECT_EQ(run_stats().buffers_allocated, 0);
  EXPECT_TRUE(kernels_of({x}).empty());  // a computed tensor needs no kernel
  y.realize();                            // y was left lazy: realizing it runs the kernel shown
  EXPECT_EQ(run_stats().kernels_run, 1);
}

TEST(KernelsOf, ListsPendingUpdatesAndLeavesThemPending) {
  Tensor w = Tensor::arange(4, DType::Float32).realize();
  w.assign(w.mul(3.0));
  const std::vector<KernelInfo> ks = kernels_of({});
  ASSERT_EQ(ks.size(), 1u);
  EXPECT_EQ(ks[0].name, "E_4");
  EXPECT_EQ(kernels_of({}).size(), 1u);  // still pending
  reset_run_stats();
  Tensor::arange(2, DType::Float32).mul(5.0).realize();  // any realize runs the update too
  EXPECT_EQ(run_stats().kernels_run, 2);
  EXPECT_EQ(w.to_host().get(3), 9.0);
  EXPECT_TRUE(kernels_of({}).empty());
}

TEST(KernelsOf, NamesTheExternGemmThatRunsInPlaceOfTheGeneratedCode) {
  Tensor a = Tensor::rand({256, 256}).realize(), b = Tensor::rand({256, 256}).realize();  // large enough for a GEMM kernel
  const bool was = backends::set_extern_gemm(false);
  const std::vector<KernelInfo> generated = kernels_of({a.matmul(b)});
  backends::set_extern_gemm(true);
  const std::vector<KernelInfo> with_extern = kernels_of({a.matmul(b)});
  // What realize would launch: the device's extern GEMM where it takes the
  // kernel (OpenBLAS's sgemm on the CPU, cuBLAS on CUDA), else the generated code.
  const std::vector<engine::ExecItem> items =
      engine::exec_items(schedule::create_schedule({a.matmul(b).uop()}));
  backends::set_extern_gemm(was);
  ASSERT_EQ(generated.size(), with_extern.size());
  ASSERT_EQ(with_extern.size(), items.size());
  ASSERT_EQ(with_extern[0].name, "gemm_256_256_256");
  for (size_t i = 0; i < items.size(); i++) {
    EXPECT_EQ(generated[i].library, "");
    EXPECT_EQ(generated[i].ast, with_extern[i].ast);
    const char *lib = items[i].program->library();
    EXPECT_EQ(with_extern[i].library, lib ? lib : "");
  }
}

}  // namespace
}  // namespace loom
