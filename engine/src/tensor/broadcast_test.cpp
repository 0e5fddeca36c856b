// An elementwise op broadcasts its operands, and Tensor::expand its input,
// as nodes (tensor::broadcast_to), without the intermediate tensors of
// unsqueezing and expanding: the nodes must be the ones those steps make
// (interned, so the same pointers), whatever view the operand is.
#include <gtest/gtest.h>

#include <vector>

#include "tensor/ops_util.h"
#include "uop/graph.h"

namespace loom {
namespace {

// torch's expand, step by step: the leading size-1 dims by a reshape (a
// tensor of its own), then the expansion as a view of that tensor's view.
UOpRef expanded_in_steps(const Tensor &t, const Shape &out) {
  Shape padded(out.size() - t.shape().size(), 1);
  padded.insert(padded.end(), t.shape().begin(), t.shape().end());
  const Tensor r = t.reshape(padded);
  return out == padded ? r.uop() : uop::view(r.uop(), uop::tracker_of(r.uop()).expand(out));
}

Tensor masked(const Tensor &t) {  // a padded view: a tracker with a mask
  return Tensor(uop::view(t.uop(), uop::tracker_of(t.uop()).pad({{1, 1}, {0, 0}})));
}

TEST(Broadcast, OperandNodesAreTheOnesExpandMakes) {
  const Tensor m = Tensor::rand({4, 3});
  const Tensor cl = Tensor::rand({2, 4, 3, 5}).permute({0, 3, 1, 2});  // channels-last strides
  const std::vector<std::pair<Tensor, Tensor>> cases = {
      {m, Tensor::rand({3})},                                   // leading dims added
      {m, Tensor::rand({4, 1})},                                // a size-1 dim expanded
      {m.permute({1, 0}), Tensor::rand({2, 1, 4})},             // a transposed operand, both sides broadcast
      {m.shrink({{1, 3}, {0, 3}}), Tensor::rand({5, 1, 1})},    // an offset view
      {m.flip({0}), Tensor::rand({3})},                         // negative strides
      {cl, Tensor::rand({1, 5, 1, 1})},                         // a per-channel operand
      {masked(m), Tensor::rand({2, 6, 1})},                     // a masked view under a new leading dim
      {Tensor::rand({6}).reshape({2, 3}).permute({1, 0}).reshape({6}), Tensor::rand({2, 1})},  // a copied reshape
  };
  for (size_t i = 0; i < cases.size(); i++) {
    const auto &[a, b] = cases[i];
    const Shape out = tensor::broadcast_shapes(a.shape(), b.shape(), "test");
    const auto [x, y] = tensor::broadcast_pair(a, b, "test");
    EXPECT_EQ(x, expanded_in_steps(a, out)) << "case " << i;
    EXPECT_EQ(y, expanded_in_steps(b, out)) << "case " << i;
    EXPECT_EQ(a.expand(out).uop(), x) << "case " << i;
    EXPECT_EQ(b.expand(out).uop(), y) << "case " << i;
    EXPECT_EQ(uop::shape_of(x), out) << "case " << i;
  }
}

}  // namespace
}  // namespace loom
