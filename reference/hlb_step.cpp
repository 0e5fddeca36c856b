// The libtorch twin of bench/hlb_step.cpp (see reference/hlb_step.h).
#include "reference_hlb.h"

#include <ATen/Parallel.h>
#include <c10/core/GradMode.h>
#include <torch/csrc/autograd/autograd.h>

#include <chrono>

#include "torch_ops.h"

namespace loom::reference {

namespace {
constexpr double kLr = 0.01, kMomentum = 0.9, kWeightDecay = 5e-4, kSmoothing = 0.2;
}

HlbResult train_hlb(const HlbSpec &spec) {
  return torch_call("train_hlb", [&] {
    if (spec.threads > 0) at::set_num_threads(spec.threads);
    std::vector<at::Tensor> params, momentum;
    for (const HostTensor &h : spec.params) {
      params.push_back(to_torch(h).detach().requires_grad_(true));
      momentum.push_back(at::zeros_like(params.back()));
    }
    std::vector<at::Tensor> running;
    for (int64_t w : spec.widths)
      for (int k = 0; k < 2; ++k) {
        running.push_back(at::zeros({w}));
        running.push_back(at::ones({w}));
      }
    const at::Tensor x = spec.channels_last ? to_torch(spec.x).contiguous(at::MemoryFormat::ChannelsLast)
                                            : to_torch(spec.x),
                     y = to_torch(spec.y);
    HlbResult res;
    for (int step = 0; step < spec.steps; ++step) {
      const auto t0 = std::chrono::steady_clock::now();
      size_t p = 0, r = 0;
      auto bn_gelu = [&](const at::Tensor &h) {
        at::Tensor out = at::batch_norm(h, params[p], params[p + 1], running[r], running[r + 1], true, 0.1, 1e-5,
                                        /*cudnn_enabled=*/false);
        p += 2;
        r += 2;
        return at::gelu(out);
      };
      at::Tensor h = at::conv2d(x, params[p++]);
      for (size_t g = 0; g < spec.widths.size(); ++g) {
        h = at::conv2d(h, params[p++], {}, 1, 1);
        h = bn_gelu(at::max_pool2d(h, {2, 2}));
        h = at::conv2d(h, params[p++], {}, 1, 1);
        h = bn_gelu(h);
      }
      h = at::amax(h, {2, 3});
      h = at::linear(h, params[p], params[p + 1]);
      const at::Tensor loss = at::cross_entropy_loss(h, y, {}, at::Reduction::Mean, -100, kSmoothing);
      const auto grads = torch::autograd::grad({loss}, params);
      res.losses.push_back(loss.item<double>());
      {
        c10::NoGradGuard no_grad;
        for (size_t i = 0; i < params.size(); ++i) {
          at::Tensor g = grads[i].add(params[i], kWeightDecay);
          momentum[i].mul_(kMomentum).add_(g);
          params[i].sub_(g.add(momentum[i], kMomentum), kLr);
        }
      }
      res.step_ms.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    return res;
  });
}

}  // namespace loom::reference
