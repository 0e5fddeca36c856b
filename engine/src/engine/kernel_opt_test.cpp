// The elementwise optimizations between a kernel's AST and its loops: axes
// merged where every view reads them as one (codegen/merge_axes.h), groups
// that leave a tail (codegen/lowerer.h), values computed in the outermost
// loop that determines them (codegen/linearize.cpp); each checked on the
// program it builds and on the values it computes against plain loops.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <set>

#include "codegen/pipeline.h"
#include "codegen/vectorize.h"
#include "engine/testing/program.h"
#include "engine/testing/values.h"
#include "engine/realize.h"
#include "loom/tensor.h"

namespace loom {
namespace {

using uop::Op;
using testing::float_values;
using testing::no_opt;

// The program the default pipeline builds for the one kernel of `t`.
codegen::KernelSpec program_of(const Tensor &t) { return testing::program_of(t, codegen::Target{}); }

std::vector<int64_t> loop_sizes(const codegen::KernelSpec &p) {
  std::vector<int64_t> n;
  for (auto &u : p.uops)
    if (u->op == Op::Range) n.push_back(static_cast<int64_t>(u->src[0]->const_value()));
  return n;
}

int64_t count(const codegen::KernelSpec &p, Op op) {
  int64_t n = 0;
  for (auto &u : p.uops) n += u->op == op;
  return n;
}

TEST(KernelOpt, PerChannelAffineMergesImageAxesIntoGroupsAndATail) {
  if (no_opt()) GTEST_SKIP() << "LOOM_NOOPT=1 turns these optimizations off";
  // (4, 3, 15, 15) * w[c] + b[c]: the image axes merge (225 elements), which
  // run as 14 groups of 16 (a vector each) and a one-element tail, with no division.
  const std::vector<float> xv = float_values(Tensor::randn({4, 3, 15, 15})), wv = {0.5f, -2.0f, 3.0f}, bv = {1.0f, 0.0f, -1.0f};
  Tensor x = Tensor::from_vector({xv.begin(), xv.end()}, {4, 3, 15, 15});
  Tensor w = Tensor::from_vector({wv.begin(), wv.end()}, {1, 3, 1, 1}), b = Tensor::from_vector({bv.begin(), bv.end()}, {1, 3, 1, 1});
  Tensor y = x.mul(w).add(b);
  const codegen::KernelSpec p = program_of(y);
  EXPECT_EQ(loop_sizes(p), std::vector<int64_t>({4, 3, 14}));
  EXPECT_EQ(count(p, Op::IDiv) + count(p, Op::Mod), 0);
  // One vector store of the group's 16 elements, one scalar store for the tail.
  std::vector<int64_t> store_lanes;
  for (auto &u : p.uops)
    if (u->op == Op::Store) store_lanes.push_back(codegen::lanes(*u));
  EXPECT_EQ(store_lanes, std::vector<int64_t>({16, 1}));
  const std::vector<float> got = float_values(y);
  for (size_t i = 0; i < got.size(); i++) {
    const size_t c = i / 225 % 3;
    ASSERT_EQ(got[i], xv[i] * wv[c] + bv[c]) << "element " << i;
  }
}

TEST(KernelOpt, PaddedReadsStepWithoutDivision) {
  if (no_opt()) GTEST_SKIP() << "LOOM_NOOPT=1 turns these optimizations off";
  // A pad of a computed value over odd dims: read by coordinates, no division,
  // every element (groups and tail) stored.
  const std::vector<float> xv = float_values(Tensor::randn({2, 5, 7}));
  Tensor x = Tensor::from_vector({xv.begin(), xv.end()}, {2, 5, 7});
  Tensor y = x.exp().pad({{0, 0}, {1, 1}, {2, 1}});
  const codegen::KernelSpec p = program_of(y);
  EXPECT_EQ(count(p, Op::IDiv) + count(p, Op::Mod), 0);
  const std::vector<float> got = float_values(y), e = float_values(x.exp());
  for (int64_t n = 0; n < 2; n++)
    for (int64_t i = 0; i < 7; i++)
      for (int64_t j = 0; j < 10; j++) {
        const bool inside = i >= 1 && i < 6 && j >= 2 && j < 9;
        const float want = inside ? e[static_cast<size_t>((n * 5 + i - 1) * 7 + j - 2)] : 0.0f;
        ASSERT_EQ(got[static_cast<size_t>((n * 7 + i) * 10 + j)], want) << n << " " << i << " " << j;
      }
}

TEST(KernelOpt, AWindowViewUnderAReshapeKeepsItsAxesApart) {
  if (no_opt()) GTEST_SKIP() << "LOOM_NOOPT=1 turns these optimizations off";
  // 2x2 windows of (2, 3, 10, 10) laid out (2, 3, 5, 5, 4): the output's
  // (3, 5, 5) would merge, but the buffer's window view below the reshape
  // would then divide the merged index apart again; the axes stay, and the
  // window's 4 elements are one group, so no division is left.
  const std::vector<float> xv = float_values(Tensor::randn({2, 3, 10, 10}));
  Tensor x = Tensor::from_vector({xv.begin(), xv.end()}, {2, 3, 10, 10});
  Tensor y = x.reshape({2, 3, 5, 2, 5, 2}).permute({0, 1, 2, 4, 3, 5}).reshape({2, 3, 5, 5, 4}).mul(testing::literal(2.0, DType::Float32));
  const codegen::KernelSpec p = program_of(y);
  EXPECT_EQ(count(p, Op::IDiv) + count(p, Op::Mod), 0);
  EXPECT_EQ(loop_sizes(p), std::vector<int64_t>({2, 3, 5, 5}));
  const std::vector<float> got = float_values(y);
  for (size_t i = 0; i < got.size(); i++) {
    const size_t k = i % 4, w = i / 4 % 5, h = i / 20 % 5, nc = i / 100;
    ASSERT_EQ(got[i], 2.0f * xv[nc * 100 + (h * 2 + k / 2) * 10 + w * 2 + k % 2]) << "element " << i;
  }
}

TEST(KernelOpt, ACostlyFunctionBroadcastOverAWindowRunsOnVectorsOfChannels) {
  if (no_opt()) GTEST_SKIP() << "LOOM_NOOPT=1 turns these optimizations off";
  // erf(x) broadcast over a 2x2 window (a max-pool's gradient after GELU's):
  // the group of the window's 4 elements would evaluate erf once per scalar
  // lane; the kernel computes 16 channels per iteration instead, erf on
  // vectors of them, with the same bits as the scalar erf.
  const Tensor x = Tensor::randn({2, 32, 7, 7}).realize(), m = Tensor::randn({2, 32, 7, 7, 4}).realize();
  Tensor y = x.erf().reshape({2, 32, 7, 7, 1}).expand({2, 32, 7, 7, 4}).mul(m);
  const codegen::KernelSpec p = program_of(y);
  int64_t erf_lanes = 0;
  for (auto &u : p.uops)
    if (u->op == Op::Erf) erf_lanes = std::max(erf_lanes, codegen::lanes(*u));
  EXPECT_EQ(erf_lanes, 16);
  const std::vector<float> got = float_values(y), e = float_values(x.erf()), mv = float_values(m);
  for (size_t i = 0; i < got.size(); i++) ASSERT_EQ(got[i], e[i / 4] * mv[i]) << "element " << i;
}

TEST(KernelOpt, ValuesAreComputedInTheOutermostLoopThatDeterminesThem) {
  if (no_opt()) GTEST_SKIP() << "LOOM_NOOPT=1 turns these optimizations off";
  // exp(a[i]) broadcast over j: computed 64 times, not 64 * 48.
  Tensor a = Tensor::randn({64, 1}).realize(), z = Tensor::randn({64, 48}).realize();
  Tensor y = a.exp().expand({64, 48}).add(z);
  const codegen::KernelSpec p = program_of(y);
  EXPECT_EQ(p.work, 64 + 64 * 48);
}

TEST(KernelOpt, AShortReductionFoldsInRegistersInLoopOrder) {
  if (no_opt()) GTEST_SKIP() << "LOOM_NOOPT=1 turns these optimizations off";
  // A max over 2x2 windows and a sum over 4 rows: no loop, no accumulator;
  // the sum adds from 0 in row order as the loop would (-0.0 sums to +0.0).
  Tensor x = Tensor::randn({4, 6, 8}).realize();
  const codegen::KernelSpec pool = program_of(x.reshape({4, 3, 2, 4, 2}).amax({2, 4}));
  EXPECT_EQ(count(pool, Op::DefineAcc), 0);
  EXPECT_EQ(loop_sizes(pool), std::vector<int64_t>({4, 3}));  // the 4 outputs of a row: one group
  std::vector<double> rows(4 * 32, -0.0);
  for (int64_t j = 0; j < 32; j++) rows[static_cast<size_t>(j + 32)] = 0.25 * static_cast<double>(j) - 3.0;
  Tensor y = Tensor::from_vector(rows, {4, 32});
  EXPECT_EQ(count(program_of(y.sum({0})), Op::DefineAcc), 0);
  const HostTensor got = y.sum({0}).to_host();
  for (int64_t j = 0; j < 32; j++) {
    float acc = 0.0f;
    for (int64_t i = 0; i < 4; i++) acc = acc + static_cast<float>(rows[static_cast<size_t>(i * 32 + j)]);
    ASSERT_EQ(std::signbit(got.get(j)), std::signbit(acc)) << j;
    ASSERT_EQ(static_cast<float>(got.get(j)), acc) << j;
  }
}

// A max over 2x2 windows with stride 2 (max_pool2d's): each of a row's
// outputs reads every second element. The lanes load the two vectors that
// span their elements, from the first lane's to the last's (never past it),
// and take the even or the odd lanes in one shuffle: no element is loaded
// alone. The values are the scalar maxima's, NaN and -0.0 included.
TEST(KernelOpt, EveryOtherElementLoadsAsTwoVectorsAndAShuffle) {
  if (no_opt()) GTEST_SKIP() << "LOOM_NOOPT=1 turns these optimizations off";
  std::vector<float> xv = float_values(Tensor::randn({3, 4, 32}));
  xv[5] = std::nanf("");
  xv[70] = -0.0f;
  xv[71] = 0.0f;
  xv[102] = 0.0f;
  xv[103] = -0.0f;
  Tensor x = Tensor::from_vector({xv.begin(), xv.end()}, {3, 4, 32});
  Tensor y = x.reshape({3, 2, 2, 16, 2}).amax({2, 4});
  const codegen::KernelSpec p = program_of(y);
  int64_t scalar_loads = 0, shuffles = 0;
  for (auto &u : p.uops) {
    scalar_loads += u->op == Op::Load && codegen::lanes(*u) == 1;
    if (u->op != Op::Vectorize) continue;
    std::set<const uop::UOp *> from;
    for (auto &s : u->src) from.insert(s->op == Op::Gep ? s->src[0].get() : s.get());
    shuffles += from.size() == 2 && u->src[0]->op == Op::Gep;
  }
  EXPECT_EQ(scalar_loads, 0);
  EXPECT_EQ(shuffles, 4);  // one per window element
  const std::vector<float> got = float_values(y);
  auto maxf = [](float a, float b) { return (a != a || a > b) ? a : b; };
  for (size_t i = 0; i < got.size(); i++) {
    const size_t n = i / 32, r = i / 16 % 2, c = i % 16, at = n * 128 + r * 64 + 2 * c;
    const float want = maxf(maxf(maxf(xv[at], xv[at + 1]), xv[at + 32]), xv[at + 33]);
    ASSERT_EQ(std::isnan(got[i]), std::isnan(want)) << "element " << i;
    if (!std::isnan(want)) ASSERT_EQ(std::signbit(got[i]), std::signbit(want)) << "element " << i;
    if (!std::isnan(want)) ASSERT_EQ(got[i], want) << "element " << i;
  }
}

// An SGD step on float32 parameters with double scalars, the way torch's
// optimizers compute it: float -> double -> float roundings per element, in
// groups of 16 with an 8-element tail (216 = 13 * 16 + 8). Every element is
// the host's double arithmetic, bit for bit: GCC 12.2's block vectorizer got
// about 8% of these elements 1 ulp wrong (runtime/cpu/device.cpp).
TEST(KernelOpt, FloatDoubleRoundingsInAGroupAreTheHostsBits) {
  Tensor::manual_seed(3);
  Tensor p = Tensor::randn({16, 216}).mul(0.01).realize(), g = Tensor::randn({16, 216}).mul(20.0).realize(),
         b = Tensor::randn({16, 216}).mul(50.0).realize();
  auto d = [](const Tensor &t) { return t.cast(DType::Float64); };
  const Tensor step = d(g).add(d(p).mul(0.042796801775693893)).cast(DType::Float32);
  const Tensor dir = d(step).add(d(b).mul(0.85000002384185791)).cast(DType::Float32);
  const Tensor y = d(p).add(d(dir).mul(-2.6127330784220248e-05)).cast(DType::Float32);
  const std::vector<float> pv = float_values(p), gv = float_values(g), bv = float_values(b), got = float_values(y);
  for (size_t i = 0; i < got.size(); i++) {
    const float s = static_cast<float>(static_cast<double>(gv[i]) + static_cast<double>(pv[i]) * 0.042796801775693893);
    const float r = static_cast<float>(static_cast<double>(s) + static_cast<double>(bv[i]) * 0.85000002384185791);
    const float want = static_cast<float>(static_cast<double>(pv[i]) + static_cast<double>(r) * -2.6127330784220248e-05);
    ASSERT_EQ(got[i], want) << "element " << i;
  }
}

}  // namespace
}  // namespace loom
