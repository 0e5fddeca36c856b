#include "shape/shape_tracker.h"

#include <gtest/gtest.h>

namespace loom::shape {
namespace {

TEST(ViewStack, CopiesShareTheViewsUntilOneChanges) {
  const ShapeTracker a = ShapeTracker::from_shape({4, 6}).permute({1, 0}).reshape({3, 8});
  ASSERT_EQ(a.views.size(), 2u);
  ShapeTracker b = a;
  EXPECT_EQ(&std::as_const(b.views)[0], &a.views[0]);  // a copy is a reference, not a deep copy
  b.views.back().offset = 5;  // non-const access: b takes its own views first
  EXPECT_NE(&std::as_const(b.views)[0], &a.views[0]);
  EXPECT_EQ(a.views.back().offset, 0);
  EXPECT_EQ(b.views.back().offset, 5);
  EXPECT_FALSE(a == b);
  b.views.back().offset = 0;
  EXPECT_EQ(a, b);  // equal by value once the views are equal again
}

TEST(ViewStack, EraseAndPushOnASharedStackLeaveTheOtherIntact) {
  const ShapeTracker a = ShapeTracker::from_shape({2, 3}).permute({1, 0}).reshape({6});
  ShapeTracker b = a;
  b.views.erase(b.views.begin());
  EXPECT_EQ(b.views.size(), 1u);
  EXPECT_EQ(a.views.size(), 2u);
  b.views.push_back(View::create({6}));
  EXPECT_EQ(b.views.size(), 2u);
  EXPECT_EQ(a.views[0].shape, (Shape{3, 2}));
  EXPECT_EQ(a.views[1].shape, (Shape{6}));
}

TEST(ViewStack, RowMajorTrackersOfOneShapeShareTheirViews) {
  ShapeTracker a = ShapeTracker::from_shape({5, 7});
  const ShapeTracker b = ShapeTracker::from_shape({5, 7});
  EXPECT_EQ(&std::as_const(a.views)[0], &b.views[0]);  // the second is a copy of the first
  EXPECT_NE(&ShapeTracker::from_shape({7, 5}).views[0], &b.views[0]);
  a.views[0].offset = 3;  // a takes its own views; the kept one stays row-major
  EXPECT_EQ(b.views[0].offset, 0);
  EXPECT_EQ(ShapeTracker::from_shape({5, 7}).views[0].offset, 0);
  EXPECT_TRUE(ShapeTracker::from_shape({5, 7}).contiguous());
}

TEST(ViewStack, AnEmptyStackReadsAsNoViews) {
  ViewStack s;
  EXPECT_TRUE(s.empty());
  EXPECT_EQ(s.begin(), s.end());
  s.push_back(View::create({2}));
  EXPECT_EQ(s.size(), 1u);
  EXPECT_EQ(s.back().shape, (Shape{2}));
}

}  // namespace
}  // namespace loom::shape
