// LOOM_BEAM: candidates are timed, the winner is cached on disk by kernel,
// a corrupt entry is rebuilt, and the values never change.
#include <gtest/gtest.h>

#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "codegen/optimize.h"
#include "codegen/pipeline.h"
#include "engine/beam.h"
#include "engine/realize.h"
#include "engine/testing/gemm_settings.h"
#include "engine/testing/values.h"
#include "loom/tensor.h"
#include "schedule/schedule.h"

namespace loom {
namespace {

namespace fs = std::filesystem;

// A matmul with a constant in its epilogue no earlier run used (a kernel new
// to both caches).
Tensor product(const Tensor &a, const Tensor &b, double c) { return a.matmul(b).mul(testing::literal(c)); }

double fresh_constant() {
  static int n = 0;
  return 1 + static_cast<double>(std::chrono::steady_clock::now().time_since_epoch().count() % 1000003 + ++n) * 1e-9;
}

// LOOM_BEAM=width for the scope.
struct BeamWidth {
  explicit BeamWidth(int width) : was(engine::set_beam_width(width)) {}
  ~BeamWidth() { engine::set_beam_width(was); }
  int was;
};

TEST(Beam, CandidatesStartWithTheHeuristicsChoiceAndThePlainLoopNest) {
  Tensor a = Tensor::rand({64, 32}).realize(), b = Tensor::rand({32, 48}).realize();
  const schedule::Schedule s = schedule::create_schedule({product(a, b, 2.0).uop()});
  ASSERT_EQ(s.items.size(), 1u);
  const uop::UOpRef kernel = codegen::optimize_input(s.items[0].ast);
  const auto c = codegen::upcast_candidates(kernel, 6);
  ASSERT_EQ(c.size(), 6u);
  EXPECT_EQ(c[0], codegen::optimize(kernel));
  EXPECT_TRUE(c[1].empty());
  for (size_t i = 0; i < c.size(); i++)
    for (size_t j = i + 1; j < c.size(); j++) EXPECT_NE(c[i], c[j]);
}

TEST(Beam, TheFastestCandidateIsCachedOnDiskAndCorruptEntriesAreRebuilt) {
  if (!testing::on_cpu()) GTEST_SKIP() << "LOOM_BEAM searches the CPU target's upcasts";
  // Big enough that the heuristic's version takes over 0.05 ms: the others are timed too.
  testing::MinMacs whole(INT64_MAX);  // a matmul stays one generated kernel (no GEMM split)
  Tensor a = Tensor::rand({256, 256}).realize(), b = Tensor::rand({256, 256}).realize();
  const double c = fresh_constant();
  const HostTensor plain = product(a, b, c).to_host();
  const schedule::Schedule s = schedule::create_schedule({product(a, b, c).uop()});
  const std::string file = engine::beam_cache_file(s.items[0], 4);

  BeamWidth beam(4);
  engine::clear_kernel_cache();
  reset_run_stats();
  const HostTensor searched = product(a, b, c).to_host();
  EXPECT_EQ(run_stats().kernels_compiled, 3);  // the candidates but the heuristic's (compiled for `plain`)
  ASSERT_TRUE(fs::exists(file));
  std::string choice;
  std::getline(std::ifstream(file), choice);
  EXPECT_FALSE(choice.empty());
  EXPECT_EQ(std::memcmp(plain.storage->data(), searched.storage->data(), plain.storage->size()), 0);

  // Read back: nothing is timed or compiled again.
  engine::clear_kernel_cache();
  reset_run_stats();
  product(a, b, c).to_host();
  EXPECT_EQ(run_stats().kernels_compiled, 0);
  std::string again;
  std::getline(std::ifstream(file), again);
  EXPECT_EQ(again, choice);

  // A corrupt entry is timed again and rewritten.
  std::ofstream(file) << "garbage\n";
  engine::clear_kernel_cache();
  const HostTensor healed = product(a, b, c).to_host();
  std::string rewritten;
  std::getline(std::ifstream(file), rewritten);
  EXPECT_NE(rewritten, "garbage");
  EXPECT_EQ(std::memcmp(plain.storage->data(), healed.storage->data(), plain.storage->size()), 0);
}

TEST(Beam, OffByDefault) {
  EXPECT_EQ(engine::beam_width(), 0);
  Tensor a = Tensor::rand({8, 8}).realize();
  const schedule::Schedule s = schedule::create_schedule({a.add(1.0).uop()});
  EXPECT_FALSE(engine::beam_upcast(s.items[0]).has_value());
}

}  // namespace
}  // namespace loom
