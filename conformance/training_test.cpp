// End to end: a small conv net trained for 20 steps in loom and in libtorch
// from the same initial weights and batches; the losses must agree within
// 1e-4 relative at every step (see reference::train_convnet for the net).
#include <gtest/gtest.h>

#include <cmath>

#include "gen.h"
#include "loom/autograd.h"
#include "loom/nn.h"
#include "reference.h"

namespace loom::conformance {
namespace {

constexpr int kSteps = 20, kBatches = 4;
constexpr int64_t kBatch = 8, kInChannels = 3, kChannels = 8, kSide = 8, kClasses = 10;

HostTensor uniform(const Shape &shape, double bound, Rng &rng) {
  HostTensor h = HostTensor::contiguous(DType::Float32, shape);
  for (int64_t i = 0; i < h.numel(); ++i) h.set(i, rng.real(-bound, bound));
  return h;
}

reference::ConvNetSpec make_spec() {
  Rng rng(20261122);
  reference::ConvNetSpec s;
  // torch's default init bounds: 1/sqrt(fan_in).
  const double conv_bound = 1 / std::sqrt(double(kInChannels * 9));
  const int64_t features = kChannels * (kSide / 2) * (kSide / 2);
  s.conv_w = uniform({kChannels, kInChannels, 3, 3}, conv_bound, rng);
  s.conv_b = uniform({kChannels}, conv_bound, rng);
  s.bn_w = uniform({kChannels}, 1, rng);
  s.bn_b = uniform({kChannels}, 0.5, rng);
  s.fc_w = uniform({kClasses, features}, 1 / std::sqrt(double(features)), rng);
  s.fc_b = uniform({kClasses}, 1 / std::sqrt(double(features)), rng);
  // Four batches, cycled: the net can fit them, so the loss falls.
  for (int step = 0; step < kSteps; ++step) {
    if (step >= kBatches) {
      s.inputs.push_back(s.inputs[step % kBatches]);
      s.labels.push_back(s.labels[step % kBatches]);
      continue;
    }
    s.inputs.push_back(uniform({kBatch, kInChannels, kSide, kSide}, 2, rng));
    HostTensor y = HostTensor::contiguous(DType::Int64, {kBatch});
    for (int64_t i = 0; i < kBatch; ++i) y.set(i, static_cast<double>(rng.uniform(0, kClasses - 1)));
    s.labels.push_back(y);
  }
  return s;
}

std::vector<double> train_in_loom(const reference::ConvNetSpec &s) {
  std::vector<Tensor> params;
  for (const HostTensor *h : {&s.conv_w, &s.conv_b, &s.bn_w, &s.bn_b, &s.fc_w, &s.fc_b})
    params.push_back(Tensor::from_host(*h).requires_grad_());
  Tensor running_mean = Tensor::zeros({kChannels}), running_var = Tensor::ones({kChannels});
  std::vector<Tensor> buffers(params.size());
  std::vector<double> losses;
  for (size_t step = 0; step < s.inputs.size(); ++step) {
    Tensor x = Tensor::from_host(s.inputs[step]);
    Tensor y = Tensor::from_host(s.labels[step]);
    Tensor h = nn::conv2d(x, params[0], params[1], 1, 1);
    h = nn::batch_norm(h, running_mean, running_var, params[2], params[3], /*training=*/true, 0.1, 1e-5);
    h = nn::max_pool2d(h.gelu(), 2);
    h = nn::linear(h.reshape({kBatch, -1}), params[4], params[5]);
    Tensor loss = nn::cross_entropy(h, y, std::nullopt, "mean", s.label_smoothing);
    std::vector<Tensor> grads = autograd::grad({loss}, params);
    losses.push_back(loss.item());
    autograd::NoGradGuard no_grad;
    for (size_t i = 0; i < params.size(); ++i) {
      buffers[i] = step == 0 ? grads[i] : buffers[i].mul(s.momentum).add(grads[i]);
      buffers[i].realize();
      params[i].assign(params[i].sub(buffers[i].mul(s.lr)));
      params[i].realize();
    }
    running_mean.realize();
    running_var.realize();
  }
  return losses;
}

TEST(Training, ConvNetLossesMatchLibtorch) {
  const reference::ConvNetSpec spec = make_spec();
  const std::vector<double> want = reference::train_convnet(spec);
  const std::vector<double> got = train_in_loom(spec);
  ASSERT_EQ(got.size(), want.size());
  double worst = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    worst = std::max(worst, std::fabs(got[i] - want[i]) / std::fabs(want[i]));
    SCOPED_TRACE("step " + std::to_string(i));
    EXPECT_NEAR(got[i], want[i], 1e-4 * std::fabs(want[i])) << "loom " << got[i] << ", libtorch " << want[i];
  }
  // The net learns: a test that trains nothing would match trivially.
  EXPECT_LT(want.back(), want.front());
  std::cout << "losses (libtorch): first " << want.front() << ", last " << want.back()
            << "; largest relative difference " << worst << "\n";
}

}  // namespace
}  // namespace loom::conformance
