#include "codegen/merge_axes.h"

#include <gtest/gtest.h>

#include "codegen/lowerer.h"
#include "uop/graph.h"

namespace loom::codegen {
namespace {

using uop::Op;
using uop::UOp;
using shape::ShapeTracker;

bool has_divmod(const UOpRef &u) {
  for (auto &n : uop::toposort(u))
    if (n->op == Op::IDiv || n->op == Op::Mod) return true;
  return false;
}

// A kernel copying `value` (of shape `shape`) into a contiguous buffer.
UOpRef copy_kernel(const UOpRef &value, const Shape &shape) {
  const UOpRef out = UOp::make(Op::DefineGlobal, DType::Float32, {}, int64_t{0});
  const UOpRef store = UOp::make(Op::Store, DType::Bool, {out, value}, ShapeTracker::from_shape(shape));
  return UOp::make(Op::Sink, DType::Bool, {store});
}

const Shape &stored_shape(const UOpRef &ast) { return ast->src[0]->arg_as<ShapeTracker>().shape(); }

// Convolution windows laid out (N, H, W, C, 3, 3) read as (N, C, H, W, 3, 3)
// through a view (dropping a size-1 axis) of a permuted view of the buffer,
// as a convolution's input gradient reads its GEMM's result: the outer view
// alone would need division to merge (H, W) and (3, 3), but merging the
// inner view's same axes too makes both read them as one.
TEST(MergeAxes, AViewOfAViewMergesAxesBothReadAsOne) {
  const UOpRef buf = UOp::make(Op::DefineGlobal, DType::Float32, {}, int64_t{1});
  const ShapeTracker inner =
      ShapeTracker::from_shape({2, 5, 5, 4, 3, 3}).reshape({2, 1, 5, 5, 4, 3, 3}).permute({0, 1, 4, 2, 3, 5, 6});
  const UOpRef windows = UOp::make(Op::View, DType::Float32, {buf}, inner);
  const ShapeTracker outer = ShapeTracker::from_shape({2, 1, 4, 5, 5, 3, 3}).reshape({2, 4, 5, 5, 3, 3});
  const UOpRef ast = copy_kernel(UOp::make(Op::View, DType::Float32, {windows}, outer), {2, 4, 5, 5, 3, 3});
  const UOpRef merged = merge_axes(ast);
  EXPECT_EQ(stored_shape(merged), Shape({2, 4, 25, 9}));
  const LoweredKernel k = lower(merged, {});
  EXPECT_FALSE(has_divmod(k.sink));
  // The same view over a value it reads with division either way stays as it is.
  const ShapeTracker odd = ShapeTracker::from_shape({2, 5, 5, 4, 9}).reshape({2, 1, 5, 5, 4, 9}).permute({0, 1, 4, 3, 2, 5});
  const UOpRef transposed = UOp::make(Op::View, DType::Float32, {buf}, odd);  // (2, 1, 4, W, H, 9)
  const ShapeTracker over = ShapeTracker::from_shape({2, 1, 4, 5, 5, 9}).reshape({2, 4, 5, 5, 9});
  const UOpRef kept = copy_kernel(UOp::make(Op::View, DType::Float32, {transposed}, over), {2, 4, 5, 5, 9});
  EXPECT_EQ(stored_shape(merge_axes(kept)), Shape({2, 4, 5, 5, 9}));
}

}  // namespace
}  // namespace loom::codegen
