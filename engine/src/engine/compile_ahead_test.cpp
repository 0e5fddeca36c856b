// Compile-ahead (loom/backends.h): a rehearsal gathers the kernels a piece of
// code needs without running them, they compile together in a few compiler
// runs, and the real run compiles nothing.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <set>
#include <thread>

#include "engine/realize.h"
#include "engine/testing/values.h"
#include "loom/backends.h"

namespace loom {
namespace {

// Constants no earlier run used, so their kernels are new to the disk cache too.
std::vector<double> fresh_constants(int n) {
  const auto t = std::chrono::steady_clock::now().time_since_epoch().count();
  std::vector<double> out;
  for (int i = 0; i < n; ++i) out.push_back(1 + static_cast<double>((t % 1000003) * 16 + getpid() % 1000 + i) * 1e-9);
  return out;
}

TEST(CompileAhead, CompilesTheRehearsedKernelsInBatchesAndTheRealRunCompilesNone) {
  constexpr int kKernels = 8;
  const std::vector<double> cs = fresh_constants(kKernels);
  Tensor x = Tensor::arange(16, DType::Float64).realize();
  auto program = [&] {
    std::vector<HostTensor> out;
    for (double c : cs) out.push_back((x * testing::literal(c) + 2.0).to_host());  // one new kernel each
    return out;
  };
  reset_run_stats();
  std::vector<HostTensor> rehearsed;
  const int64_t compiled = backends::compile_ahead([&] {
    rehearsed = program();
    throw Error("a rehearsal's error is dropped");
  });
  EXPECT_EQ(compiled, kKernels);
  EXPECT_EQ(run_stats().kernels_run, 0);
  ASSERT_EQ(rehearsed.size(), static_cast<size_t>(kKernels));
  EXPECT_EQ(rehearsed[0].get(5), 0.0);  // a rehearsal's results read as zeros

  reset_run_stats();
  const std::vector<HostTensor> got = program();
  EXPECT_EQ(run_stats().kernels_compiled, 0);
  EXPECT_EQ(run_stats().kernels_run, kKernels);
  for (int k = 0; k < kKernels; ++k)
    for (int64_t i = 0; i < 16; ++i) ASSERT_DOUBLE_EQ(got[k].get(i), static_cast<double>(i) * cs[k] + 2.0);

  // On the CPU, each kernel has its own cache entry and a batch's entries are
  // hard links to one object, so there are at most as many objects as
  // batches (one per core for so few kernels). Other devices compile each
  // kernel on its own.
  if (std::string(engine::device_name()) != "CPU") return;
  std::set<ino_t> objects;
  for (double c : cs) {
    const std::vector<std::string> files = engine::cache_files({(x * testing::literal(c) + 2.0).uop()});
    ASSERT_EQ(files.size(), 1u);
    struct stat st {};
    ASSERT_EQ(stat(files[0].c_str(), &st), 0) << files[0];
    objects.insert(st.st_ino);
  }
  const size_t cores = std::max(1u, std::thread::hardware_concurrency());
  EXPECT_LE(objects.size(), std::min<size_t>(cores, kKernels));
}

TEST(CompileAhead, DoesNotNest) {
  std::string error;
  backends::compile_ahead([&] {
    try {
      backends::compile_ahead([] {});
    } catch (const Error &e) {
      error = e.what();
    }
  });
  EXPECT_NE(error.find("does not nest"), std::string::npos) << error;
}

}  // namespace
}  // namespace loom
