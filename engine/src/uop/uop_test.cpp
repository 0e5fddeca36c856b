#include "uop/uop.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>

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

// ops.def's rows agree with each other: what the stages derive from a row
// (the ALU predicates, the C spelling, the vector lists) needs these.
TEST(OpTable, EveryRowIsConsistent) {
  std::set<std::string> names;
  for (size_t i = 0; i < kOpCount; i++) {
    const OpInfo &o = kOps[i];
    const Op op = static_cast<Op>(i);
    SCOPED_TRACE(o.name);
    EXPECT_TRUE(names.insert(o.name).second) << "a name twice";
    EXPECT_EQ(is_alu(op), o.arity > 0) << "an ALU op has operands, the others none";
    EXPECT_LE(o.arity, 3);
    if (o.c != OpInfo::kOwn) {
      EXPECT_EQ(o.arity, 1) << "only unary math ops are spelled from the table";
      EXPECT_NE(std::string(o.math), "");
    }
    if (o.flags & OpInfo::kPays) {
      EXPECT_TRUE(o.flags & OpInfo::kVector);
      EXPECT_NE(std::string(o.vector), "") << "a vector that pays needs its vector function";
    }
    if (o.flags & (OpInfo::kComparison | OpInfo::kCommutative)) EXPECT_EQ(o.arity, 2);
  }
  EXPECT_EQ(kOpCount, static_cast<size_t>(Op::Where) + 1);
  EXPECT_STREQ(op_name(Op::ReduceAxis), "REDUCE_AXIS");
}

}  // namespace
}  // namespace loom::uop
