#include "uop/uop.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

namespace loom::uop {
namespace {

TEST(UOp, EqualNodesAreIdentical) {
  auto a = UOp::const_int(3), b = UOp::const_int(3);
  EXPECT_EQ(a, b);
  EXPECT_EQ(alu(Op::Add, a, b), alu(Op::Add, b, a));
  EXPECT_NE(UOp::const_(DType::Float32, 0.0), UOp::const_(DType::Float32, -0.0));
  EXPECT_EQ(UOp::const_(DType::Float32, NAN), UOp::const_(DType::Float32, NAN));
}

TEST(UOp, DifferentDTypesDiffer) {
  EXPECT_NE(UOp::const_int(1, DType::Int32), UOp::const_int(1, DType::Int64));
}

// toposort_refs gives a node no visited-set entry when it has one strong
// reference (one parent). Here y and x are each held by two parents and by
// nothing else, the constants 7 and 9 by one: every node must come once,
// after its sources.
TEST(UOp, ToposortListsEachNodeOnceAfterItsSources) {
  auto build = [] {
    UOpRef x = alu(Op::Mul, UOp::const_int(11), UOp::const_int(13));
    UOpRef y = alu(Op::Add, x, alu(Op::Neg, x));
    return alu(Op::Add, alu(Op::Sub, alu(Op::Mul, y, UOp::const_int(7)), y), UOp::const_int(9));
  };
  const UOpRef root = build();
  const std::vector<const UOpRef *> order = toposort_refs(root);
  std::set<const UOp *> seen;
  for (const UOpRef *u : order) {
    for (const UOpRef &s : (*u)->src) EXPECT_TRUE(seen.count(s.get())) << "a source after its parent";
    EXPECT_TRUE(seen.insert(u->get()).second) << "a node listed twice";
  }
  // 11, 13, x, -x, y, 7, y*7, y*7-y, 9, root
  EXPECT_EQ(order.size(), 10u);
  EXPECT_EQ(order.back()->get(), root.get());
}

}  // namespace
}  // namespace loom::uop
