// The hlb-like training step (hlb_step.h) at test size: every reduction is
// computed once, so the kernels execute at most 1.5x the ALU work the
// step's graphs need with every op computed once; the loss is finite and
// the third step (the first two settle which updates run in place) compiles
// nothing new.
#include <gtest/gtest.h>

#include <cmath>

#include "hlb_step.h"

namespace loom {
namespace {

TEST(Work, HlbLikeStepComputesEachReductionOnce) {
  bench::HlbNet net = bench::make_hlb_net({8, 16, 32}, 4, 3);
  Tensor::manual_seed(4);
  Tensor x = Tensor::randn({4, 3, 32, 32}).realize();
  Tensor y = Tensor::randint(0, 10, {4}).realize();
  for (int step = 0; step < 3; ++step) {
    reset_run_stats();
    const double loss = bench::hlb_step(net, x, y);
    const RunStats st = run_stats();
    EXPECT_TRUE(std::isfinite(loss));
    // forward, backward and the update: at least the six convolutions' multiply-adds, twice over
    EXPECT_GT(st.work_needed, 2 * 2 * 4 * (8 * 24 * 31 * 31 + 8 * 8 * 15 * 15) * 9);
    EXPECT_LE(st.work, st.work_needed * 3 / 2) << "step " << step;
    if (step == 2) {
      EXPECT_EQ(st.kernels_compiled, 0);
    }
  }
}

// From its second step on, each realize of the step finds its graph's
// structure in the schedule cache: no graph is cut into kernels again. From
// the fourth on, the optimizer's writes also reuse their donations, decided
// under the same reference counts, instead of checking the graph again.
TEST(ScheduleCache, AnHlbLikeStepIsScheduledOnce) {
  bench::HlbNet net = bench::make_hlb_net({8, 16, 32}, 4, 3);
  Tensor::manual_seed(5);
  Tensor x = Tensor::randn({4, 3, 32, 32}).realize();
  Tensor y = Tensor::randint(0, 10, {4}).realize();
  for (int step = 0; step < 4; ++step) {
    reset_run_stats();
    bench::hlb_step(net, x, y);
    const RunStats st = run_stats();
    if (step >= 2) {
      // The step's graph (loss, gradients, running statistics) and the optimizer's: reading the
      // targets (cross_entropy's check) and the realized loss (item()) schedules nothing.
      EXPECT_EQ(st.schedules, 2) << "step " << step;
      EXPECT_EQ(st.schedule_hits, st.schedules) << "step " << step;
    }
    if (step >= 3) {
      EXPECT_EQ(st.donation_checks, 0) << "step " << step;
    }
  }
}

}  // namespace
}  // namespace loom
