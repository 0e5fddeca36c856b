#include "codegen/indexing.h"

#include <gtest/gtest.h>

#include "uop/symbolic.h"

namespace loom::codegen {
namespace {

using uop::Op;
using uop::UOp;

UOpRef range(int64_t id, int64_t n) { return UOp::make(Op::Range, DType::Int64, {UOp::const_int(n)}, id); }

bool has_divmod(const UOpRef &u) {
  for (auto &n : uop::toposort(u))
    if (n->op == Op::IDiv || n->op == Op::Mod) return true;
  return false;
}

TEST(Indexing, ContiguousReshapesNeedNoDivMod) {
  // (4, 6) -> (24,) -> (2, 12): one merged view, plain multiply-add.
  auto st = shape::ShapeTracker::from_shape({4, 6}).reshape({24}).reshape({2, 12});
  ASSERT_EQ(st.views.size(), 1u);
  auto [flat, valid] = view_index(st, {range(0, 2), range(1, 12)});
  EXPECT_FALSE(has_divmod(flat));
  EXPECT_TRUE(valid->is_const());
}

TEST(Indexing, UnravelOfRavelSimplifies) {
  auto r0 = range(0, 3), r1 = range(1, 4), r2 = range(2, 5);
  auto flat = ravel({r0, r1, r2}, {3, 4, 5});
  auto idx = unravel(flat, {3, 4, 5});
  EXPECT_EQ(idx[0], r0);
  EXPECT_EQ(idx[1], r1);
  EXPECT_EQ(idx[2], r2);
}

TEST(Indexing, MaskedPadIsValidOnlyInside) {
  auto st = shape::ShapeTracker::from_shape({3}).pad({{2, 1}});
  auto [flat, valid] = view_index(st, {range(0, 6)});
  EXPECT_FALSE(valid->is_const());
}

TEST(Indexing, PadOfAComputedValueReadsItsCoordinatesWithoutDivMod) {
  // A (2, 3, 3) value padded by one on its last two dims, as a convolution's
  // input is: each coordinate is the view index minus the pad, no division.
  auto st = shape::ShapeTracker::from_shape({2, 3, 3}).pad({{0, 0}, {1, 1}, {1, 1}});
  auto r0 = range(0, 2), r1 = range(1, 5), r2 = range(2, 5);
  auto [coords, valid] = view_coords(st, {r0, r1, r2}, {2, 3, 3});
  ASSERT_EQ(coords.size(), 3u);
  for (auto &c : coords) EXPECT_FALSE(has_divmod(c));
  EXPECT_EQ(coords[0], r0);
  EXPECT_EQ(coords[1], uop::simplify(r1 + (-1)));
  EXPECT_FALSE(valid->is_const());
}

TEST(Indexing, WindowOfAComputedValueSteps) {
  // 2x2 windows of stride 2 over a (4, 4) value: row = 2*i + ki, no division.
  shape::View w = shape::View::create({2, 2, 2, 2}, shape::Strides{8, 2, 4, 1});
  shape::ShapeTracker st{{w}};
  auto i = range(0, 2), j = range(1, 2), ki = range(2, 2), kj = range(3, 2);
  auto [coords, valid] = view_coords(st, {i, j, ki, kj}, {4, 4});
  EXPECT_EQ(coords[0], uop::simplify(i * 2 + ki));
  EXPECT_EQ(coords[1], uop::simplify(j * 2 + kj));
  EXPECT_TRUE(valid->is_const());
}

TEST(Indexing, MergedDimsStillUnravel) {
  // A (6,) view of a (2, 3) value crosses a dim boundary: it needs div/mod,
  // and its coordinates address the same elements as the flat index.
  shape::ShapeTracker st{{shape::View::create({6})}};
  auto r = range(0, 6);
  auto [coords, valid] = view_coords(st, {r}, {2, 3});
  EXPECT_TRUE(has_divmod(coords[0]));
  EXPECT_EQ(ravel(coords, {2, 3}), uop::simplify(ravel(unravel(r, {2, 3}), {2, 3})));
}

TEST(Symbolic, DivModFolding) {
  auto i = range(0, 7), j = range(1, 4);
  auto x = i * 4 + j;
  EXPECT_EQ(uop::simplify(uop::alu(Op::IDiv, x, UOp::const_int(4))), i);
  EXPECT_EQ(uop::simplify(uop::alu(Op::Mod, x, UOp::const_int(4))), j);
  EXPECT_EQ(uop::simplify(uop::alu(Op::Mod, j, UOp::const_int(8))), j);
  EXPECT_EQ(uop::simplify(uop::alu(Op::IDiv, j, UOp::const_int(8)))->const_value(), 0);
}

TEST(Symbolic, ConstantFoldingAndIdentities) {
  auto i = range(0, 7);
  EXPECT_EQ(uop::simplify(i + 0), i);
  EXPECT_EQ(uop::simplify(i * 1), i);
  EXPECT_EQ(uop::simplify((i + 2) + 3), uop::simplify(i + 5));
  EXPECT_EQ(uop::simplify(uop::alu(Op::CmpLt, i, UOp::const_int(7)))->const_value(), 1);
}

}  // namespace
}  // namespace loom::codegen
