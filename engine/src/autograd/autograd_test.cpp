// Autograd mechanics: accumulation, grad mode, detach, leaves and in-place
// checks. Gradient values of each op are checked against libtorch in the
// conformance suite (GradProperty, FiniteDifference); here only the plumbing.
#include <gtest/gtest.h>

#include <cmath>

#include "loom/autograd.h"
#include "loom/tensor.h"

namespace loom {
namespace {

std::vector<double> values(const Tensor &t) {
  HostTensor h = t.to_host();
  std::vector<double> v;
  for (int64_t i = 0; i < h.numel(); ++i) v.push_back(h.get(i));
  return v;
}

Tensor leaf(const std::vector<double> &v) {
  return Tensor::from_vector(v, {static_cast<int64_t>(v.size())}).requires_grad_();
}

TEST(Autograd, BackwardAccumulatesIntoLeaves) {
  Tensor x = leaf({1, -2, 3});
  Tensor y = x.mul(x).sum();
  const std::vector<double> once = values(autograd::grad({y}, {x}, {}, false, nullptr, /*retain_graph=*/true)[0]);
  y.backward();
  ASSERT_TRUE(x.grad());
  EXPECT_EQ(values(*x.grad()), once);
  x.mul(x).sum().backward();  // a second backward adds
  std::vector<double> twice = once;
  for (double &v : twice) v *= 2;
  EXPECT_EQ(values(*x.grad()), twice);
  x.set_grad(std::nullopt);
  EXPECT_FALSE(x.grad());
}

TEST(Autograd, BackwardOfSeveralTensorsAddsTheirGradientsInOneSchedule) {
  // torch.autograd.backward([x.x, 3x . w], [1, 2]): x.grad = 2x + 2 * 3w.
  Tensor x = leaf({1, -2});
  Tensor w = Tensor::from_vector({1, 10}, {2});
  Tensor a = x.mul(x).sum(), b = x.mul(3).mul(w).sum();
  reset_run_stats();
  autograd::backward({a, b}, {Tensor::full({}, 1.0), Tensor::full({}, 2.0)});
  EXPECT_EQ(run_stats().schedules, 1);  // the gradient and both tensors together
  ASSERT_TRUE(x.grad());
  EXPECT_EQ(values(*x.grad()), (std::vector<double>{8, 56}));
  reset_run_stats();
  EXPECT_EQ(values(a), (std::vector<double>{5}));  // realized with the gradients: read, not run again
  EXPECT_EQ(values(b), (std::vector<double>{-57}));
  EXPECT_EQ(run_stats().schedules, 0);
  EXPECT_THROW(autograd::backward({x.mul(x).sum()}, {Tensor::full({}, 1.0), Tensor::full({}, 1.0)}), Error);
}

TEST(Autograd, RetainGradKeepsANonLeafsGradient) {
  Tensor x = leaf({1, -2, 3});
  Tensor h = x.mul(x);  // dL/dh = 2 for L = sum(2 h)
  Tensor other = x.add(x);
  EXPECT_THROW(leaf({1}).detach().retain_grad(), Error);  // requires_grad=False
  h.retain_grad();
  h.retain_grad();  // once is enough: the gradient is kept once
  EXPECT_TRUE(h.retains_grad());
  EXPECT_FALSE(other.retains_grad());
  h.mul(Tensor::full({3}, 2.0)).sum().backward(std::nullopt, /*retain_graph=*/true);
  ASSERT_TRUE(h.grad());
  EXPECT_EQ(values(*h.grad()), (std::vector<double>{2, 2, 2}));
  EXPECT_FALSE(other.grad());
  EXPECT_EQ(values(*x.grad()), (std::vector<double>{4, -8, 12}));
  h.sum().backward();  // accumulates, as a leaf's does
  EXPECT_EQ(values(*h.grad()), (std::vector<double>{3, 3, 3}));
}

TEST(Autograd, MaterializeIsAKernelBoundaryForTheValueAndItsGradient) {
  auto chain = [](const Tensor &x, bool materialize) {  // h <- tanh(h) * h, six times
    Tensor h = x;
    for (int t = 0; t < 6; t++) {
      h = h.tanh().mul(h);
      if (materialize) h = h.materialize();
    }
    return h;
  };
  Tensor fused = chain(leaf({0.5, -1, 2}), false), stepped = chain(leaf({0.5, -1, 2}), true);
  EXPECT_EQ(stepped.grad_fn_name(), "CloneBackward");
  for (Tensor *h : {&fused, &stepped}) {
    reset_run_stats();
    h->realize();
    EXPECT_EQ(run_stats().kernels_run, h == &fused ? 1 : 6);
  }
  EXPECT_EQ(values(stepped), values(fused));
  Tensor a = leaf({0.5, -1, 2}), b = leaf({0.5, -1, 2});
  chain(a, false).sum().backward();
  chain(b, true).sum().backward();
  const std::vector<double> ga = values(*a.grad()), gb = values(*b.grad());
  for (size_t i = 0; i < ga.size(); i++) EXPECT_NEAR(gb[i], ga[i], 1e-6 * std::abs(ga[i]));
}

TEST(Autograd, BackwardRealizesTheOutputWithTheGradients) {
  Tensor x = leaf({1, -2, 3});
  Tensor loss = x.mul(x).sum();
  loss.backward();
  reset_run_stats();
  EXPECT_EQ(loss.item(), 14.0);
  EXPECT_EQ(run_stats().schedules, 0);  // read from its buffer: the reduction is not scheduled again
}

TEST(Autograd, GradWithAGradientArgumentScalesTheResult) {
  Tensor x = leaf({0.5, 1.5});
  Tensor y = x.exp();
  Tensor w = Tensor::from_vector({2, -1}, {2});
  const auto g = values(autograd::grad({y}, {x}, {w}, false, nullptr, /*retain_graph=*/true)[0]);
  const auto e = values(x.detach().exp());
  EXPECT_DOUBLE_EQ(g[0], 2 * e[0]);
  EXPECT_DOUBLE_EQ(g[1], -e[1]);
  y.backward(w);
  EXPECT_EQ(values(*x.grad()), g);
}

// torch frees what a node saved when backward passes it without
// retain_graph: a second backward through such a node raises, one through
// nodes that saved nothing (add, sum, views, mean) runs again.
TEST(Autograd, ASecondBackwardThroughFreedValuesRaisesAsTorchDoes) {
  Tensor x = leaf({1, -2, 3});
  Tensor y = x.mul(x).sum();
  y.backward();
  try {
    y.backward();
    FAIL() << "a second backward through mul's saved inputs ran";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("Trying to backward through the graph a second time"), std::string::npos);
  }
  EXPECT_THROW(autograd::grad({y}, {x}), Error);
  EXPECT_EQ(values(*x.grad()), (std::vector<double>{2, -4, 6}));  // the first backward's, once

  Tensor z = x.exp().sum();
  z.backward(std::nullopt, /*retain_graph=*/true);
  z.backward();  // retained: runs, and frees
  EXPECT_THROW(z.backward(), Error);

  x.set_grad(std::nullopt);
  Tensor s = x.add(Tensor::ones({3})).reshape({3, 1}).mean();
  s.backward();
  s.backward();
  std::vector<double> twice(3, 2.0 / 3);
  const std::vector<double> got = values(*x.grad());
  for (size_t i = 0; i < got.size(); i++) EXPECT_FLOAT_EQ(got[i], twice[i]);
}

// After a backward without retain_graph the nodes hold none of the forward's
// values (torch's release_variables): with the loss and the forward's last
// activation still held, as a training loop holds them, realizing the
// gradients keeps buffers for the gradients and those two only; every other
// intermediate is a transient of that realize.
TEST(Autograd, TheForwardsIntermediatesAreTransientsOfTheGradientsRealize) {
  Tensor x = Tensor::rand({16, 8}).realize();
  Tensor w1 = Tensor::rand({8, 32}).realize(), w2 = Tensor::rand({32, 4}).realize();
  w1.requires_grad_();
  w2.requires_grad_();
  Tensor h = x.matmul(w1);
  h = h.sub(h.sum({1}, true).div(32.0)).neg().reshape({16, 32}).matmul(w2);  // sum, neg and views save nothing
  Tensor loss = h.mul(h).sum();
  std::vector<Tensor> grads = autograd::grad({loss}, {w1, w2});
  grads.push_back(loss);
  grads.push_back(h);
  const int64_t live = memory_stats().live_buffers;
  reset_run_stats();
  realize_all(grads);
  EXPECT_GE(run_stats().kernels_run, 6);
  EXPECT_EQ(memory_stats().live_buffers, live + 4);  // two gradients, the loss and h
}

TEST(Autograd, NoGradDetachAndLeaves) {
  Tensor x = leaf({1, 2});
  {
    autograd::NoGradGuard guard;
    EXPECT_FALSE(x.mul(2).requires_grad());
  }
  Tensor y = x.mul(2);
  EXPECT_TRUE(y.requires_grad());
  EXPECT_FALSE(y.is_leaf());
  EXPECT_EQ(y.grad_fn_name(), "MulBackward");
  EXPECT_FALSE(y.detach().requires_grad());
  EXPECT_TRUE(y.detach().is_leaf());
  // Integer outputs are never differentiable.
  EXPECT_FALSE(x.argmax().requires_grad());
  EXPECT_FALSE(x.gt(Tensor::zeros({2})).requires_grad());
}

TEST(Autograd, GradientsFlowOnlyToInputsThatRequireThem) {
  Tensor x = leaf({1, 2});
  Tensor c = Tensor::from_vector({3, 4}, {2});
  Tensor y = x.mul(c).sum();
  EXPECT_EQ(values(autograd::grad({y}, {x})[0]), values(c));
  EXPECT_THROW(autograd::grad({y}, {c}), Error);
}

TEST(Autograd, Errors) {
  Tensor x = leaf({1, 2});
  EXPECT_THROW(Tensor::from_vector({1}, {1}, DType::Int64).requires_grad_(), Error);
  EXPECT_THROW(x.mul(2).requires_grad_(false), Error);        // not a leaf
  EXPECT_THROW(x.mul(2).backward(), Error);                   // not a scalar
  EXPECT_THROW(Tensor::ones({1}).backward(), Error);          // does not require grad
  EXPECT_THROW(x.assign(Tensor::zeros({2})), Error);           // in-place on a leaf that requires grad
  Tensor unused = leaf({5});
  EXPECT_THROW(autograd::grad({x.sum()}, {unused}), Error);
  EXPECT_EQ(values(autograd::grad({x.sum()}, {unused}, {}, true)[0]), std::vector<double>{0});
  EXPECT_THROW(autograd::grad({x.sum()}, {x}, {Tensor::ones({3})}), Error);  // grad_output shape
}

TEST(Autograd, InPlaceChangeOfASavedTensorRaisesAtBackward) {
  Tensor x = leaf({1, 2});
  Tensor h = x.add(1);           // a non-leaf that mul saves
  Tensor y = h.mul(h).sum();
  {
    autograd::NoGradGuard guard;
    h.assign(Tensor::zeros({2}));  // bumps h's version
  }
  EXPECT_EQ(h.version(), 1);
  EXPECT_THROW(y.backward(), Error);
}

// torch's mean() saves only its input's size; mean(dims) (MeanBackward1)
// saves the input, so changing it in place before backward raises.
TEST(Autograd, MeanOverDimsSavesItsInputAsTorchDoes) {
  Tensor x = leaf({1, 2});
  Tensor h = x.mul(1.0);
  Tensor all = h.mean(), over_dims = h.mean({0});
  {
    autograd::NoGradGuard guard;
    h.assign(Tensor::zeros({2}));
  }
  EXPECT_NO_THROW(all.backward());
  EXPECT_THROW(over_dims.backward(), Error);
}

TEST(Autograd, AssignIsSeenByLaterReadsNotEarlierGraphs) {
  Tensor a = Tensor::from_vector({1, 2}, {2});
  Tensor before = a.mul(10);  // built before the assignment: keeps the old value, as torch computed it
  Tensor alias = a;           // handles share the tensor
  a.assign(Tensor::from_vector({5, 6}, {2}));
  EXPECT_EQ(values(alias), (std::vector<double>{5, 6}));
  EXPECT_EQ(values(before), (std::vector<double>{10, 20}));
  EXPECT_EQ(values(a.add(1)), (std::vector<double>{6, 7}));
}

TEST(Autograd, AssignThroughAViewUpdatesTheBaseAndItsOtherViews) {
  Tensor base = Tensor::arange(6).reshape({2, 3}).cast(DType::Float32);
  Tensor row = base.slice(0, 1, 2);        // the second row
  Tensor col = base.transpose(0, 1);       // another view of the same storage
  Tensor every_other = base.reshape({6}).slice(0, 0, 6, 2);
  row.assign(Tensor::full({1, 3}, -1.0));
  EXPECT_EQ(values(base), (std::vector<double>{0, 1, 2, -1, -1, -1}));
  EXPECT_EQ(values(col), (std::vector<double>{0, -1, 1, -1, 2, -1}));
  every_other.assign(Tensor::full({3}, 7.0));
  EXPECT_EQ(values(base), (std::vector<double>{7, 1, 7, -1, 7, -1}));
  EXPECT_EQ(values(row), (std::vector<double>{-1, 7, -1}));
  EXPECT_EQ(base.version(), 2);
  EXPECT_EQ(row.version(), 2);  // views share the version counter
  // A detached tensor shares storage too.
  base.detach().assign(Tensor::zeros({2, 3}));
  EXPECT_EQ(values(col), std::vector<double>(6, 0));
}

TEST(Autograd, InPlaceUpdatesThatTorchForbidsRaise) {
  Tensor x = Tensor::ones({3}).requires_grad_();
  EXPECT_THROW(x.slice(0, 0, 1).assign(Tensor::zeros({1})), Error);  // a view of a leaf that requires grad
  Tensor y = x.mul(2);
  Tensor made_without_grad;
  {
    autograd::NoGradGuard guard;
    made_without_grad = y.slice(0, 0, 2);
    Tensor x_view = x.slice(0, 0, 2);
    x_view.assign(Tensor::zeros({2}));  // an optimizer-style update under no_grad
  }
  EXPECT_EQ(values(x), (std::vector<double>{0, 0, 1}));
  EXPECT_THROW(made_without_grad.assign(Tensor::zeros({2})), Error);
  EXPECT_THROW(y.detach().assign(x), Error);  // a detached tensor from a value that requires grad
}

TEST(Autograd, GraphsBuiltBeforeAnAssignKeepTheirGradients) {
  Tensor x = leaf({1, 2});
  Tensor w = leaf({3, 4});
  Tensor y = x.add(1);
  Tensor before = y.mul(3);   // reads y's old node
  y.assign(w.mul(5));         // y now comes from w
  EXPECT_EQ(y.grad_fn_name(), "CopyBackwards");
  auto g = autograd::grad({before.sum().add(y.sum())}, {x, w});
  EXPECT_EQ(values(g[0]), (std::vector<double>{3, 3}));
  EXPECT_EQ(values(g[1]), (std::vector<double>{5, 5}));
  // Assigning a leaf makes the tensor a non-leaf whose gradient reaches the leaf.
  Tensor z = Tensor::zeros({2});
  z.assign(w);
  EXPECT_FALSE(z.is_leaf());
  EXPECT_EQ(values(autograd::grad({z.mul(z).sum()}, {w})[0]), (std::vector<double>{6, 8}));
}

TEST(Autograd, AssignThroughAViewRecordsCopySlices) {
  Tensor x = leaf({1, 2, 3, 4});
  Tensor w = leaf({10, 20});
  Tensor y = x.mul(2);
  Tensor view = y.slice(0, 1, 4, 2);  // y[1::2]
  Tensor other = y.slice(0, 0, 2);    // another view, rebuilt from the new y
  view.assign(w.mul(w));
  EXPECT_EQ(y.grad_fn_name(), "CopySlices");
  EXPECT_EQ(values(y), (std::vector<double>{2, 100, 6, 400}));
  EXPECT_EQ(values(other), (std::vector<double>{2, 100}));
  // d/dx and d/dw of sum(y * [1, 2, 3, 4]) + sum(other): x[1], x[3] were overwritten.
  Tensor loss = y.mul(Tensor::from_vector({1, 2, 3, 4}, {4})).sum().add(other.sum());
  auto g = autograd::grad({loss}, {x, w});
  EXPECT_EQ(values(g[0]), (std::vector<double>{4, 0, 6, 0}));
  EXPECT_EQ(values(g[1]), (std::vector<double>{2 * 10 * 3, 2 * 20 * 4}));
  // A base that did not require grad starts to once a value that does is written into it.
  Tensor base = Tensor::zeros({2, 2});
  base.transpose(0, 1).slice(0, 1, 2).assign(w.reshape({1, 2}));  // column 1
  EXPECT_TRUE(base.requires_grad());
  EXPECT_EQ(values(base), (std::vector<double>{0, 10, 0, 20}));
  EXPECT_EQ(values(autograd::grad({base.mul(base).sum()}, {w})[0]), (std::vector<double>{20, 40}));
}

// torch saves exp's result: updating it in place before backward raises;
// sigmoid's input is not saved, so updating that does not.
TEST(Autograd, SavedResultUpdatedInPlaceRaises) {
  Tensor x = leaf({1, 2});
  Tensor y = x.exp();
  Tensor loss = y.mul(y).sum();
  y.assign(Tensor::zeros({2}));
  EXPECT_THROW(loss.backward(), Error);
  Tensor t = x.mul(1.0), s = t.sigmoid();
  t.assign(Tensor::zeros({2}));
  EXPECT_NO_THROW(s.sum().backward());
}

// torch.min(x): a NaN gradient reaches only the selected element.
TEST(Autograd, FullMinGradientIsZeroAtUnselectedElements) {
  Tensor x = leaf({3, 1, 2});
  const std::vector<double> g = values(autograd::grad({x.min()}, {x}, {Tensor::full({}, NAN)})[0]);
  EXPECT_TRUE(std::isnan(g[1]));
  EXPECT_EQ(g[0], 0);
  EXPECT_EQ(g[2], 0);
}

// Aliasing as in torch: contiguous() of a contiguous tensor is the tensor,
// unfold() is a view, and an op's result is never its input's own handle.
TEST(Autograd, AliasingFollowsTorch) {
  Tensor a = Tensor::from_vector({1, 2, 3, 4}, {2, 2});
  Tensor c = a.add(1.0).reshape({4});
  c.contiguous().assign(Tensor::zeros({4}));
  EXPECT_EQ(values(c), (std::vector<double>{0, 0, 0, 0}));
  Tensor w = a.unfold(1, 1, 1);
  a.assign(Tensor::full({2, 2}, 7.0));
  EXPECT_EQ(values(w), (std::vector<double>{7, 7, 7, 7}));
  Tensor s = Tensor::from_vector({5}, {});
  Tensor p = s.cumprod(0);
  p.assign(Tensor::zeros({}));
  EXPECT_EQ(values(s), (std::vector<double>{5}));
}

}  // namespace
}  // namespace loom
