// Bad input to the neural-network ops raises a clear loom::Error, as torch raises.
// Also dropout's statistics, which no torch comparison can check.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "errors/expect_error.h"
#include "loom/autograd.h"
#include "loom/nn.h"

namespace loom {
namespace {

Tensor f32(const Shape &s) { return Tensor::zeros(s, DType::Float32); }
Tensor i64(const Shape &s) { return Tensor::zeros(s, DType::Int64); }
Tensor b8(const Shape &s) { return Tensor::zeros(s, DType::Bool); }

TEST(ErrorsNN, MatmulShapesAndRanks) {
  expect_error([] { f32({2, 3}).matmul(f32({4, 5})).to_host(); }, {"2x3", "4x5"});
  expect_error([] { f32({}).matmul(f32({3})).to_host(); }, {"0D"});
  expect_error([] { f32({2, 3}).matmul(Tensor::zeros({3, 2}, DType::Float64)).to_host(); }, {"float32", "float64"});
  // Integer matmul is torch's too; bool is not.
  expect_error<TypeError>([] { b8({2, 3}).matmul(b8({3, 2})).to_host(); }, {"bool"});
  expect_error<TypeError>([] { nn::linear(b8({2, 3}), b8({4, 3})).to_host(); }, {"bool"});
  expect_error([] { nn::linear(f32({2, 3}), f32({4, 2})).to_host(); }, {"2x3"});
  expect_error([] { nn::linear(f32({2, 3}), f32({4, 3}), f32({4, 1})).to_host(); }, {"(4, 1)"});
}

TEST(ErrorsNN, Conv2dChecksChannelsRanksAndSizes) {
  expect_error([] { nn::conv2d(f32({1, 3, 5, 5}), f32({4, 2, 3, 3})).to_host(); }, {"3 channels", "(4, 2, 3, 3)"});
  expect_error([] { nn::conv2d(f32({1, 4, 5, 5}), f32({3, 2, 3, 3}), std::nullopt, 1, 0, 1, 2).to_host(); },
               {"groups=2", "divisible"});
  expect_error([] { nn::conv2d(f32({5, 5}), f32({4, 3, 3, 3})).to_host(); }, {"(5, 5)"});
  expect_error([] { nn::conv2d(f32({1, 3, 5, 5}), f32({4, 3, 3})).to_host(); }, {"(4, 3, 3)"});
  expect_error([] { nn::conv2d(f32({1, 3, 2, 2}), f32({4, 3, 3, 3})).to_host(); }, {"Kernel size", "2 x 2"});
  // A kernel dim of size 0 with a huge dilation: the output length would pass int64.
  expect_error([] { nn::conv2d(f32({1, 3, 8, 8}), f32({4, 3, 0, 3}), std::nullopt, 1, 0, {INT64_MAX, 1}).to_host(); },
               {"conv2d", "overflows int64"});
  expect_error([] { nn::conv2d(f32({1, 3, 5, 5}), f32({4, 3, 3, 3}), f32({3})).to_host(); }, {"bias", "(3,)"});
  expect_error([] { nn::conv2d(f32({1, 3, 5, 5}), f32({4, 3, 3, 3}), std::nullopt, 2, "same").to_host(); },
               {"same", "strided"});
  expect_error<ValueError>([] { nn::conv2d(f32({1, 3, 5, 5}), f32({4, 3, 3, 3}), std::nullopt, 1, "full").to_host(); },
                           {"full"});
  expect_error([] { nn::conv2d(f32({1, 3, 5, 5}), f32({4, 3, 3, 3}), std::nullopt, 0).to_host(); }, {"stride"});
  expect_error<TypeError>([] { nn::conv2d(b8({1, 3, 5, 5}), b8({4, 3, 3, 3})).to_host(); }, {"bool"});
  // torch's dilated integer path is int64's only.
  auto i8 = [](const Shape &s) { return Tensor::zeros(s, DType::Int8); };
  expect_error<TypeError>([&] { nn::conv2d(i8({1, 3, 5, 5}), i8({4, 3, 2, 2}), std::nullopt, 1, 0, 2).to_host(); },
                          {"dilated", "int8"});
}

TEST(ErrorsNN, PoolsCheckKernelPaddingAndRank) {
  expect_error([] { nn::max_pool2d(f32({1, 1, 4, 4}), 2, std::nullopt, 2).to_host(); },
               {"max_pool2d", "pad should be at most half of kernel size, but got pad=2 and kernel_size=2"});
  expect_error([] { nn::avg_pool2d(f32({1, 1, 4, 4}), 0).to_host(); },
               {"avg_pool2d", "kernel size should be greater than zero, but got kH: 0 kW: 0"});
  expect_error([] { nn::max_pool2d(f32({1, 1, 2, 2}), 3).to_host(); },
               {"Given input size: (1x2x2). Calculated output size: (1x0x0). Output size is too small"});
  expect_error([] { nn::max_pool2d(f32({4, 4}), 2).to_host(); }, {"(4, 4)"});
  expect_error([] { nn::max_pool2d(f32({1, 0, 4, 4}), 2).to_host(); }, {"optional 0 dim batch size", "(1, 0, 4, 4)"});
  expect_error([] { nn::adaptive_avg_pool2d(f32({1, 0, 4, 4}), 2).to_host(); }, {"(1, 0, 4, 4)"});
}

// The options past kernel, stride and padding: torch 1.13's checks and words.
TEST(ErrorsNN, PoolsCheckStrideDilationCeilModeAndDivisor) {
  expect_error([] { nn::max_pool2d(f32({1, 1, 4, 4}), 2, nn::Pair2(0)).to_host(); }, {"stride should not be zero"});
  expect_error([] { nn::avg_pool2d(f32({1, 1, 4, 4}), 2, nn::Pair2(1, -1)).to_host(); },
               {"stride should be greater than zero, but got dH: 1 dW: -1"});
  expect_error([] { nn::max_pool2d(f32({1, 1, 4, 4}), 2, std::nullopt, 0, 0).to_host(); },
               {"dilation should be greater than zero, but got dilationH: 0 dilationW: 0"});
  expect_error([] { nn::max_pool2d(f32({1, 1, 4, 4}), 2, std::nullopt, 0, nn::Pair2(1, -2)).to_host(); },
               {"dilationH: 1 dilationW: -2"});
  expect_error([] { nn::avg_pool2d(f32({1, 1, 4, 4}), 2, std::nullopt, nn::Pair2(0, -1)).to_host(); },
               {"pad must be non-negative, but got pad: -1"});
  // torch 1.13 bounds the padding by half the kernel, not the dilated kernel.
  expect_error([] { nn::max_pool2d(f32({1, 1, 8, 8}), 3, 1, 2, 2).to_host(); },
               {"pad should be at most half of kernel size, but got pad=2 and kernel_size=3"});
  // Dilation widens the window past the input.
  expect_error([] { nn::max_pool2d(f32({1, 1, 4, 4}), 2, 1, 0, 4).to_host(); },
               {"Calculated output size: (1x0x0)", "too small"});
  // ceil_mode rounds up but not past an input that is too small for any window.
  expect_error([] { nn::avg_pool2d(f32({1, 1, 1, 1}), 3, 1, 0, true).to_host(); },
               {"Calculated output size: (1x-1x-1)"});
  expect_error([] { nn::avg_pool2d(f32({1, 1, 4, 4}), 2, std::nullopt, 0, false, true, 0).to_host(); },
               {"avg_pool2d", "divisor must be not zero"});
  // ceil_mode keeps a last partial window only when it starts inside the input
  // or the left padding: 5 -> 3 windows of 2 with stride 2; 4 -> 2.
  EXPECT_EQ(nn::max_pool2d(f32({1, 1, 5, 4}), 2, std::nullopt, 0, 1, true).shape(), (Shape{1, 1, 3, 2}));
  EXPECT_EQ(nn::avg_pool2d(f32({1, 5, 5}), 2, std::nullopt, 1, true).shape(), (Shape{1, 3, 3}));
  EXPECT_EQ(nn::avg_pool2d(f32({1, 5, 5}), 3, 2, 1, true).shape(), (Shape{1, 3, 3}));
}

// The op table draws no NaN or -inf, so which element of a window gets
// max_pool2d's gradient then is checked here, against values from torch 1.13:
// the last NaN of a window, and never padding, even when the input is -inf.
TEST(MaxPoolGradient, FollowsTorchOnNaNAndInfinity) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
  auto grad_of_sum = [](std::vector<double> v, const Shape &s, nn::Pair2 k, nn::Pair2 st, nn::Pair2 p, nn::Pair2 d,
                        bool ceil_mode) {
    Tensor x = Tensor::from_vector(v, s);
    x.requires_grad_();
    nn::max_pool2d(x, k, st, p, d, ceil_mode).sum().backward();
    const HostTensor g = x.grad()->to_host();
    std::vector<double> out;
    for (int64_t i = 0; i < g.numel(); ++i) out.push_back(g.get(i));
    return out;
  };
  EXPECT_EQ(grad_of_sum({nan, 1, nan, 2, 2, 0}, {1, 1, 1, 6}, {1, 3}, {1, 3}, 0, 1, false),
            (std::vector<double>{0, 0, 1, 1, 0, 0}));
  EXPECT_EQ(grad_of_sum({-inf, -inf, -inf, -inf}, {1, 1, 2, 2}, 2, 1, 1, 1, false), (std::vector<double>{4, 2, 2, 1}));
  EXPECT_EQ(grad_of_sum({1, nan, 3, -inf, 5, nan, -inf}, {1, 1, 1, 7}, {1, 3}, {1, 2}, {0, 1}, {1, 2}, true),
            (std::vector<double>{0, 1, 0, 0, 0, 2, 0}));
  EXPECT_EQ(grad_of_sum({-inf, -inf, -inf, -inf, -inf}, {1, 1, 5}, {1, 2}, {1, 2}, 0, 1, true),
            (std::vector<double>{1, 0, 1, 0, 1}));
}

TEST(ErrorsNN, NormsCheckShapes) {
  expect_error([] { nn::batch_norm(f32({2, 3, 4}), f32({4}), f32({3})).to_host(); }, {"running_mean", "3"});
  expect_error([] { nn::batch_norm(f32({2, 3}), f32({3}), f32({3}), f32({2})).to_host(); }, {"weight"});
  expect_error<ValueError>([] { nn::batch_norm(f32({1, 3}), std::nullopt, std::nullopt, std::nullopt, std::nullopt, true).to_host(); },
                           {"more than 1 value"});
  expect_error([] { nn::batch_norm(f32({2, 3}), std::nullopt, std::nullopt).to_host(); }, {"evaluation"});
  expect_error([] { nn::layer_norm(f32({2, 3}), {4}).to_host(); }, {"(4,)", "(2, 3)"});
  expect_error([] { nn::layer_norm(f32({2, 3}), {3}, f32({2})).to_host(); }, {"weight", "(2,)"});
}

TEST(ErrorsNN, LossesCheckTargetsAndReduction) {
  expect_error<ValueError>([] { nn::cross_entropy(f32({4, 3}), i64({5})).to_host(); }, {"(5,)", "(4,)"});
  expect_error<ValueError>([] { nn::cross_entropy(f32({4, 3}), f32({4, 2})).to_host(); }, {"(4, 2)"});
  expect_error([] { nn::cross_entropy(f32({4, 3}), Tensor::zeros({4}, DType::Int32)).to_host(); }, {"int32"});
  expect_error([] { nn::cross_entropy(f32({4, 3}), i64({4}), f32({2})).to_host(); }, {"3 classes", "(2,)"});
  expect_error<ValueError>([] { nn::cross_entropy(f32({4, 3}), i64({4}), std::nullopt, "avg").to_host(); }, {"avg"});
  expect_error([] { nn::cross_entropy(f32({4, 3}), i64({4}), std::nullopt, "mean", 1.5).to_host(); },
               {"label_smoothing"});
  expect_error<ValueError>([] { nn::nll_loss(f32({4, 3, 2}), i64({4, 3})).to_host(); }, {"(4, 2)", "(4, 3)"});
  expect_error<ValueError>([] { nn::binary_cross_entropy_with_logits(f32({4}), f32({3})).to_host(); }, {"(3,)", "(4,)"});
  expect_error<ValueError>([] { nn::mse_loss(f32({4}), f32({4}), "max").to_host(); }, {"max"});
}

TEST(ErrorsNN, ActivationsCheckArguments) {
  expect_error<IndexError>([] { nn::softmax(f32({2, 3}), 2).to_host(); }, {"2"});
  expect_error<IndexError>([] { nn::log_softmax(f32({2, 3}), -3).to_host(); }, {"-3"});
  expect_error<TypeError>([] { nn::softmax(i64({2, 3}), 1).to_host(); }, {"int64"});
  expect_error([] { f32({2}).clamp(std::nullopt, std::nullopt).to_host(); }, {"min", "max"});
  expect_error<ValueError>([] { nn::dropout(f32({2}), 1.5).to_host(); }, {"1.5"});
  expect_error<ValueError>([] { nn::hardtanh(f32({2}), 1, -1).to_host(); }, {"min_val"});
}

// Training-mode batch_norm updates the caller's running statistics in place.
TEST(ErrorsNN, BatchNormUpdatesRunningStatsInPlace) {
  Tensor x = Tensor::from_vector({1, 2, 3, 5}, {4, 1});
  Tensor rm = Tensor::zeros({1}), rv = Tensor::ones({1});
  const int64_t v0 = rm.version();
  nn::batch_norm(x, rm, rv, std::nullopt, std::nullopt, true, 0.5).realize();
  EXPECT_GT(rm.version(), v0);
  // Batch mean 2.75; unbiased variance (3.0625 + 0.5625 + 0.0625 + 5.0625) / 3.
  EXPECT_NEAR(rm.item(), 0.5 * 2.75, 1e-6);
  EXPECT_NEAR(rv.item(), 0.5 + 0.5 * (8.75 / 3), 1e-5);
}

// p strictly between 0 and 1 cannot be compared with torch: the keep rate and
// the 1/(1-p) scaling are checked statistically, and the gradient is the mask.
TEST(DropoutStatistics, KeepRateScalingAndGradient) {
  const int64_t n = 20000;
  for (double p : {0.2, 0.5, 0.9}) {
    SCOPED_TRACE(p);
    Tensor::manual_seed(7);
    Tensor x = Tensor::ones({n});
    x.requires_grad_();
    Tensor y = nn::dropout(x, p);
    const HostTensor h = y.to_host();
    int64_t kept = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double v = h.get(i);
      if (v != 0) {
        ++kept;
        EXPECT_NEAR(v, 1 / (1 - p), 1e-6) << "at " << i;
      }
    }
    const double rate = static_cast<double>(kept) / n, sigma = std::sqrt(p * (1 - p) / n);
    EXPECT_NEAR(rate, 1 - p, 5 * sigma);
    y.sum().backward();
    const HostTensor g = x.grad()->to_host();
    for (int64_t i = 0; i < n; i += 97) EXPECT_EQ(g.get(i), h.get(i)) << "at " << i;
    // The same seed draws the same mask; another seed another one.
    Tensor::manual_seed(7);
    const HostTensor again = nn::dropout(Tensor::ones({n}), p).to_host();
    Tensor::manual_seed(8);
    const HostTensor other = nn::dropout(Tensor::ones({n}), p).to_host();
    int64_t same = 0, differ = 0;
    for (int64_t i = 0; i < n; ++i) {
      same += again.get(i) == h.get(i);
      differ += other.get(i) != h.get(i);
    }
    EXPECT_EQ(same, n);
    EXPECT_GT(differ, n / 20);
  }
  EXPECT_EQ(nn::dropout(Tensor::ones({3}), 0.5, false).to_host().get(1), 1.0);
}

}  // namespace
}  // namespace loom
