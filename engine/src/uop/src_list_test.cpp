#include "uop/src_list.h"

#include <gtest/gtest.h>

#include <vector>

#include "uop/uop.h"

namespace loom::uop {
namespace {

std::vector<UOpRef> consts(int n) {
  std::vector<UOpRef> out;
  for (int i = 0; i < n; i++) out.push_back(UOp::const_int(1000 + i));
  return out;
}

// Up to three sources inline, more on the heap: the same list either way,
// through a copy and a move, each list holding one reference to each source
// (counted from what else holds them: other tests may share the constants).
TEST(SrcList, HoldsInlineAndHeapListsThroughCopiesAndMoves) {
  for (int n : {0, 1, 3, 4, 9}) {
    const std::vector<UOpRef> v = consts(n);
    std::vector<long> held;
    for (const UOpRef &s : v) held.push_back(s.use_count());
    SrcList a(v);
    ASSERT_EQ(a.size(), static_cast<size_t>(n));
    EXPECT_EQ(a.empty(), n == 0);
    for (int i = 0; i < n; i++) {
      EXPECT_EQ(a[i], v[i]);
      EXPECT_EQ(v[i].use_count(), held[i] + 1) << "n=" << n << " i=" << i;
    }
    SrcList b(a);
    EXPECT_TRUE(b == a);
    SrcList c(std::move(a));
    EXPECT_TRUE(a.empty());
    EXPECT_TRUE(c == b);
    EXPECT_EQ(c.vec(), v);
    for (int i = 0; i < n; i++) EXPECT_EQ(v[i].use_count(), held[i] + 2) << "n=" << n << " i=" << i;
  }
  // A moved vector hands its references over.
  std::vector<UOpRef> v = consts(5);
  const UOpRef last = v.back();
  const long held = last.use_count();
  SrcList moved(std::move(v));
  EXPECT_EQ(moved.back(), last);
  EXPECT_EQ(last.use_count(), held);
}

TEST(SrcList, ListsDifferingInLengthOrOneSourceDiffer) {
  const std::vector<UOpRef> v = consts(4);
  EXPECT_FALSE(SrcList({v[0], v[1]}) == SrcList({v[0], v[1], v[2]}));
  EXPECT_FALSE(SrcList({v[0], v[1], v[2], v[3]}) == SrcList({v[0], v[1], v[2], v[0]}));
  EXPECT_TRUE(SrcList({v[0], v[1], v[2], v[3]}) == SrcList(v));
}

// Interning compares sources: a node made again from equal sources is the
// same node, inline or not.
TEST(SrcList, NodesWithEqualSourcesAreOneNode) {
  const std::vector<UOpRef> v = consts(5);
  EXPECT_EQ(UOp::make(Op::Sink, DType::Bool, v), UOp::make(Op::Sink, DType::Bool, SrcList(v)));
  EXPECT_EQ(alu(Op::Add, v[0], v[1]), UOp::make(Op::Add, DType::Int64, {v[0], v[1]}));
  EXPECT_NE(alu(Op::Add, v[0], v[1]), alu(Op::Add, v[1], v[0]));
}

}  // namespace
}  // namespace loom::uop
