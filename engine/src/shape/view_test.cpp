#include "shape/view.h"

#include <gtest/gtest.h>

#include "loom/error.h"

namespace loom::shape {
namespace {

TEST(View, ReshapeMergesContiguousRuns) {
  View v = View::create({2, 3, 4}).permute({1, 0, 2});  // (3, 2, 4) strides (4, 12, 1)
  auto r = v.reshape({3, 8});
  EXPECT_FALSE(r.has_value());  // dims 0 and 1 are not adjacent in memory
  auto r2 = v.reshape({3, 2, 2, 2});
  ASSERT_TRUE(r2.has_value());
  EXPECT_EQ(r2->strides, (Strides{4, 12, 2, 1}));
}

TEST(View, FlipAndStepKeepBounds) {
  View v = View::create({10}).flip({true}).step({3});  // 9, 6, 3, 0
  EXPECT_EQ(v.shape, (Shape{4}));
  EXPECT_EQ(v.offset, 9);
  EXPECT_EQ(v.strides, (Strides{-3}));
  EXPECT_EQ(v.index_bounds(), (std::pair<int64_t, int64_t>{0, 9}));
}

TEST(View, PadThenShrinkRestoresTheView) {
  View v = View::create({4, 5});
  View p = v.pad({{1, 2}, {0, 3}}).shrink({{1, 5}, {0, 5}});
  EXPECT_EQ(p, v);
}

TEST(View, PadOfAViewWithoutElementsIgnoresItsStrides) {
  // An empty view's strides may be huge (a reshape of zero elements): padding
  // it moves no offset, and the result is fully masked.
  View v = View::create({0, 5}, Strides{8355289962797855731, 1});
  View p = v.pad({{3, 3}, {3, 3}});
  EXPECT_TRUE(p.empty());
  EXPECT_EQ(p.offset, 0);
}

TEST(View, PadThatMovesTheOffsetPastInt64Raises) {
  View v = View::create({2, 2}, Strides{int64_t{1} << 61, 1});
  EXPECT_THROW(v.pad({{8, 0}, {0, 0}}), Error);
}

TEST(View, ShrinkOfAViewWithoutElementsIgnoresItsStrides) {
  // An empty tensor reshaped to (0, n, n, n) has strides near n * n; a slice
  // near the end of a dim of size n moves no offset.
  const int64_t n = 36170086419038336;
  View v = View::create({0, n}, Strides{n, n});
  View p = v.shrink({{0, 0}, {n - 6, n - 4}});
  EXPECT_EQ(p.shape, (Shape{0, 2}));
  EXPECT_EQ(p.offset, 0);
}

TEST(View, ShrinkThatMovesTheOffsetPastInt64Raises) {
  View v = View::create({4}, Strides{int64_t{1} << 62});
  EXPECT_THROW(v.shrink({{3, 4}}), Error);
}

}  // namespace
}  // namespace loom::shape
