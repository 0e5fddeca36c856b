#include "uop/uop.h"

#include <gtest/gtest.h>

#include <cmath>

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

}  // namespace
}  // namespace loom::uop
