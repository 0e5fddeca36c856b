// The libtorch side of the training check (see train_convnet in reference.h).
#include <c10/core/GradMode.h>
#include <torch/csrc/autograd/autograd.h>

#include "torch_ops.h"

namespace loom::reference {

std::vector<double> train_convnet(const ConvNetSpec &spec) {
  return torch_call("train_convnet", [&] {
    std::vector<at::Tensor> params;
    for (const HostTensor *h : {&spec.conv_w, &spec.conv_b, &spec.bn_w, &spec.bn_b, &spec.fc_w, &spec.fc_b})
      params.push_back(to_torch(*h).detach().requires_grad_(true));
    const int64_t channels = spec.conv_w.shape.at(0);
    at::Tensor running_mean = at::zeros({channels}), running_var = at::ones({channels});
    std::vector<at::Tensor> momentum_buffers(params.size());
    std::vector<double> losses;
    for (size_t step = 0; step < spec.inputs.size(); ++step) {
      const at::Tensor x = to_torch(spec.inputs[step]);
      const at::Tensor y = to_torch(spec.labels[step]);
      at::Tensor h = at::conv2d(x, params[0], params[1], {1, 1}, {1, 1});
      h = at::batch_norm(h, params[2], params[3], running_mean, running_var, /*training=*/true, 0.1, 1e-5,
                         /*cudnn_enabled=*/false);
      h = at::gelu(h);
      h = at::max_pool2d(h, {2, 2});
      h = at::linear(h.flatten(1), params[4], params[5]);
      const at::Tensor loss = at::cross_entropy_loss(h, y, {}, at::Reduction::Mean, -100, spec.label_smoothing);
      losses.push_back(loss.item<double>());
      const auto grads = torch::autograd::grad({loss}, params);
      c10::NoGradGuard no_grad;
      for (size_t i = 0; i < params.size(); ++i) {
        // torch.optim.SGD: buf = g on the first step, then momentum * buf + g; p -= lr * buf.
        momentum_buffers[i] =
            step == 0 ? grads[i].clone() : momentum_buffers[i].mul(spec.momentum).add(grads[i]);
        params[i].sub_(momentum_buffers[i].mul(spec.lr));
      }
    }
    return losses;
  });
}

}  // namespace loom::reference
