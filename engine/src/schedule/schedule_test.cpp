// Kernel-count tests: fusion decisions are visible in run_stats().
#include <gtest/gtest.h>

#include <cmath>

#include "loom/stats.h"
#include "loom/tensor.h"
#include "schedule/schedule_cache.h"

namespace loom {
namespace {

Tensor iota(const Shape &shape, double scale = 1.0, double shift = 0.0) {
  std::vector<double> v;
  for (int64_t i = 0, n = shape_numel(shape); i < n; i++) v.push_back(i * scale + shift);
  return Tensor::from_vector(v, shape);
}

TEST(Fusion, AddReluSumIsOneKernel) {
  Tensor a = iota({4, 5}, 1.0, -7.0), b = iota({4, 5}, 0.5);
  a.realize();
  b.realize();
  reset_run_stats();
  HostTensor out = (a + b).relu().sum().to_host();
  EXPECT_EQ(run_stats().kernels_run, 1);
  double want = 0;
  for (int i = 0; i < 20; i++) want += std::max(0.0, (i - 7.0) + 0.5 * i);
  EXPECT_DOUBLE_EQ(out.get(0), want);
}

TEST(Fusion, PermutedStepSliceExpIsOneKernelWithoutCopies) {
  Tensor x = iota({6, 4}, 0.1);
  x.realize();
  reset_run_stats();
  Tensor y = x.permute({1, 0}).slice(0, std::nullopt, std::nullopt, 2).exp();
  HostTensor out = y.to_host();
  EXPECT_EQ(run_stats().kernels_run, 1);
  EXPECT_EQ(run_stats().buffers_allocated, 1);  // only the result: the view was read in place
  ASSERT_EQ(out.shape, (Shape{2, 6}));
  for (int64_t i = 0; i < 2; i++)
    for (int64_t j = 0; j < 6; j++) EXPECT_FLOAT_EQ(out.get(i * 6 + j), std::exp(0.1f * (j * 4 + i * 2)));
}

TEST(Fusion, ReduceEpilogueFuses) {
  Tensor x = iota({3, 8});
  x.realize();
  reset_run_stats();
  HostTensor out = (x.sum({1}) * 2 + 1).sqrt().to_host();
  EXPECT_EQ(run_stats().kernels_run, 1);
  EXPECT_FLOAT_EQ(out.get(1), std::sqrt(2.0f * (8 * 8 + 28) + 1));
}

TEST(Fusion, BroadcastReductionIsRealizedOnce) {
  // x - max(x) reads the max through a broadcast: two kernels, not a recompute per element.
  Tensor x = iota({3, 8});
  x.realize();
  reset_run_stats();
  HostTensor out = (x - x.amax({1}, true)).to_host();
  EXPECT_EQ(run_stats().kernels_run, 2);
  EXPECT_FLOAT_EQ(out.get(0), -7);
  EXPECT_FLOAT_EQ(out.get(23), 0);
}

// A value with costly math (exp, erf, ...) that two kernels read is computed
// once into a buffer of its own; one that a single kernel reads twice, or a
// small one, is computed where it is read.
TEST(Fusion, ACostlyValueSeveralKernelsReadIsComputedOnce) {
  auto run = [](const Shape &shape, bool two_kernels) {
    Tensor x = iota(shape, 1e-3);
    x.realize();
    const Tensor e = x.exp() * x;
    std::vector<Tensor> out = two_kernels ? std::vector<Tensor>{e.sum({1}), e.mul(x).sum({0})}
                                          : std::vector<Tensor>{(e * e + e).sum({1})};
    reset_run_stats();
    realize_all(out);
    return run_stats();
  };
  const RunStats shared = run({64, 128}, true);
  EXPECT_EQ(shared.kernels_run, 3);  // e, then the two sums reading it
  // exp(x) * x is 2 * 8192 ops: computed again, the work would exceed the
  // need by that much (the sums' lanes add a few hundred).
  EXPECT_LT(shared.work - shared.work_needed, 64 * 128) << "exp(x) * x computed once";
  const RunStats small = run({4, 16}, true);
  EXPECT_EQ(small.kernels_run, 2);
  EXPECT_GT(small.work, small.work_needed) << "a small value is computed by each kernel reading it";
  const RunStats one_kernel = run({64, 128}, false);
  EXPECT_EQ(one_kernel.kernels_run, 1);
  EXPECT_LT(one_kernel.work - one_kernel.work_needed, 64 * 128);
}

// A reduction's value that several nodes of one kernel read (GELU reads its
// input twice) stays in that kernel, summed once per element; two kernels
// reading it read it from a buffer of its own.
TEST(Fusion, AReductionOneKernelReadsTwiceIsSummedOnceInIt) {
  Tensor x = iota({16, 64}, 1e-3);
  x.realize();
  const Tensor s = x.sum({1});
  reset_run_stats();
  const HostTensor out = s.gelu().to_host();
  EXPECT_EQ(run_stats().kernels_run, 1);
  EXPECT_LT(run_stats().work - run_stats().work_needed, 16 * 64) << "the sum computed once";
  for (int64_t i = 0; i < 16; i++) {
    double sum = 0;
    for (int64_t j = 0; j < 64; j++) sum += (i * 64 + j) * 1e-3;
    EXPECT_NEAR(out.get(i), 0.5 * sum * (1 + std::erf(sum / std::sqrt(2.0))), 1e-5 * std::abs(sum));
  }
  std::vector<Tensor> two{s.exp(), s.sqrt()};
  reset_run_stats();
  realize_all(two);
  EXPECT_EQ(run_stats().kernels_run, 3);
}

TEST(Fusion, MovementOpsAloneRunNoKernel) {
  Tensor x = iota({2, 3});
  x.realize();
  reset_run_stats();
  Tensor v = x.permute({1, 0}).flip({0}).reshape({6}).reshape({3, 2});
  v.realize();
  EXPECT_EQ(run_stats().kernels_run, 0);
}

TEST(Realize, RealizedNodesAreNotRecomputed) {
  Tensor x = iota({4});
  Tensor y = x * 3;
  Tensor z = y + 1;
  Tensor y2 = y;
  y2.realize();
  reset_run_stats();
  z.to_host();
  EXPECT_EQ(run_stats().kernels_run, 1);
}

TEST(Runtime, LargeKernelsSplitAcrossThreadsMatchPlainLoops) {
  // Big enough to take the thread-pool path: each thread runs a slice of the outer loop.
  const int64_t rows = 700, cols = 300;
  Tensor x = iota({rows, cols}, 1e-5, -0.1);
  HostTensor rowsum = (x * 2).exp().sum({1}).to_host();
  HostTensor colmax = x.permute({1, 0}).amax({1}).to_host();
  for (int64_t r = 0; r < rows; r += 37) {
    double want = 0;
    for (int64_t c = 0; c < cols; c++) want += std::exp(2.0 * static_cast<float>((r * cols + c) * 1e-5 - 0.1));
    EXPECT_NEAR(rowsum.get(r), want, 1e-4 * want);
  }
  for (int64_t c = 0; c < cols; c += 23) EXPECT_FLOAT_EQ(colmax.get(c), static_cast<float>(((rows - 1) * cols + c) * 1e-5 - 0.1));
}

// A reduction over a view read backwards in every dim: GCC 12's -O2 loop
// vectorizer summed this wrongly until kernels were built without it.
TEST(Runtime, ReductionOverAFlippedViewMatchesPlainLoops) {
  const std::vector<double> v = {0.5, -1.25, 2.0, 0.75, -0.5, 1.5, -2.0, 0.25};
  Tensor x = Tensor::from_vector(v, {2, 1, 2, 2}).flip({0, 2, 3});
  Tensor d = x.sub(Tensor::full({1, 1, 1, 1}, -0.281982421875));
  double want = 0;
  for (double e : v) want += (static_cast<float>(e) + 0.281982421875f) * (static_cast<float>(e) + 0.281982421875f);
  EXPECT_NEAR(d.mul(d).sum().item(), want, 1e-5);
}

// A loop building the same graph over new buffers is cut into kernels once;
// each later step replays the cached schedule with its own buffers.
TEST(ScheduleCache, ASameStructureOverNewBuffersIsScheduledOnce) {
  std::vector<size_t> sizes;
  for (int step = 0; step < 4; step++) {
    Tensor a = iota({3, 5}, 1.0, step), b = iota({3, 5}, 0.5, -step);
    a.realize();
    b.realize();
    HostTensor out = ((a * 2 + b).relu().sum({1}) - a.amax({1})).to_host();
    for (int64_t r = 0; r < 3; r++) {
      double want = 0, most = -1e9;
      for (int64_t c = 0; c < 5; c++) {
        const double x = r * 5 + c + step, y = (r * 5 + c) * 0.5 - step;
        want += std::max(0.0, 2 * x + y);
        most = std::max(most, x);
      }
      EXPECT_DOUBLE_EQ(out.get(r), want - most) << "step " << step << " row " << r;
    }
    sizes.push_back(schedule::cached_schedules());
  }
  EXPECT_EQ(sizes[1], sizes[2]);
  EXPECT_EQ(sizes[2], sizes[3]);
}

// Buffers are placeholders by position: a graph reading one buffer twice and
// one reading two buffers are different structures, scheduled apart.
TEST(ScheduleCache, ReadingOneBufferTwiceIsNotReadingTwo) {
  Tensor a = iota({4}, 1.0), b = iota({4}, 10.0);
  a.realize();
  b.realize();
  HostTensor same = (a + a).to_host(), two = (a + b).to_host(), again = (b + b).to_host();
  for (int64_t i = 0; i < 4; i++) {
    EXPECT_DOUBLE_EQ(same.get(i), 2.0 * i);
    EXPECT_DOUBLE_EQ(two.get(i), 11.0 * i);
    EXPECT_DOUBLE_EQ(again.get(i), 20.0 * i);
  }
}

// Whether a write's stores go into its base's buffer is part of the key: the
// same write with the old value still held elsewhere copies first.
TEST(ScheduleCache, ADonatedWriteAndACopyingWriteAreScheduledApart) {
  for (int step = 0; step < 3; step++) {
    Tensor acc = Tensor::zeros({3, 4}).realize();
    Tensor row = iota({1, 4}, 1.0, step).realize();
    Tensor held = step == 1 ? acc.mul(1.0) : Tensor();  // reads the old value
    acc.slice(0, 1, 2).assign(row);
    acc.realize();
    HostTensor out = acc.to_host();
    for (int64_t c = 0; c < 4; c++) EXPECT_DOUBLE_EQ(out.get(4 + c), c + step);
    if (step == 1) {
      HostTensor old = held.to_host();
      for (int64_t i = 0; i < 12; i++) EXPECT_DOUBLE_EQ(old.get(i), 0.0);
    }
  }
}

}  // namespace
}  // namespace loom
