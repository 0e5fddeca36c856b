#include "hlb_step.h"

#include <chrono>
#include <cmath>

#include "loom/autograd.h"
#include "loom/nn.h"

namespace loom::bench {

namespace {

constexpr double kLr = 0.01, kMomentum = 0.9, kWeightDecay = 5e-4, kSmoothing = 0.2;
constexpr int64_t kClasses = 10;

Tensor uniform(const Shape &shape, double bound) { return Tensor::rand(shape).mul(2 * bound).sub(bound); }

}  // namespace

HlbNet make_hlb_net(const std::vector<int64_t> &widths, int64_t batch, uint64_t seed) {
  Tensor::manual_seed(seed);
  HlbNet net;
  net.widths = widths;
  net.batch = batch;
  auto conv = [&](int64_t cin, int64_t cout, int64_t k) {
    net.params.push_back(uniform({cout, cin, k, k}, 1 / std::sqrt(double(cin * k * k))));
  };
  auto bn = [&](int64_t c) {
    net.params.push_back(Tensor::ones({c}));
    net.params.push_back(Tensor::zeros({c}));
    net.running.push_back(Tensor::zeros({c}));
    net.running.push_back(Tensor::ones({c}));
  };
  conv(3, 24, 2);
  int64_t cin = 24;
  for (int64_t w : widths) {
    conv(cin, w, 3);
    bn(w);
    conv(w, w, 3);
    bn(w);
    cin = w;
  }
  net.params.push_back(uniform({kClasses, cin}, 1 / std::sqrt(double(cin))));
  net.params.push_back(uniform({kClasses}, 1 / std::sqrt(double(cin))));
  for (auto &p : net.params) {
    p.realize();
    p.requires_grad_();
    net.momentum.push_back(Tensor::zeros(p.shape()).realize());
  }
  for (auto &r : net.running) r.realize();
  return net;
}

namespace {

// Adds the host time (wall minus kernel time) from its construction to each
// lap() to the phase lap() names, when there are phases to add to.
class PhaseClock {
 public:
  explicit PhaseClock(HlbPhases *phases) : phases_(phases) { reset(); }
  void lap(double HlbPhases::*phase) {
    if (!phases_) return;
    const double wall = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0_).count();
    phases_->*phase += wall - (run_stats().kernel_seconds - k0_) * 1e3;
    reset();
  }

 private:
  void reset() {
    if (!phases_) return;
    t0_ = std::chrono::steady_clock::now();
    k0_ = run_stats().kernel_seconds;
  }
  HlbPhases *phases_;
  std::chrono::steady_clock::time_point t0_;
  double k0_ = 0;
};

// The loss and the parameters' gradients, realized with the BatchNorm running
// statistics (whose lazy updates read the forward): nothing still reads the
// old parameter values when this returns, so the update writes the
// parameters in place, as torch's optimizer does.
std::vector<Tensor> loss_and_grads(HlbNet &net, const Tensor &x, const Tensor &y, Tensor *loss_out, PhaseClock &clock) {
  size_t p = 0, r = 0;
  auto bn_gelu = [&](const Tensor &h) {
    Tensor out = nn::batch_norm(h, net.running[r], net.running[r + 1], net.params[p], net.params[p + 1],
                                /*training=*/true, 0.1, 1e-5);
    p += 2;
    r += 2;
    return out.gelu();
  };
  Tensor h = nn::conv2d(x, net.params[p++]);
  for (size_t g = 0; g < net.widths.size(); ++g) {
    h = nn::conv2d(h, net.params[p++], std::nullopt, 1, 1);
    h = bn_gelu(nn::max_pool2d(h, 2));
    h = nn::conv2d(h, net.params[p++], std::nullopt, 1, 1);
    h = bn_gelu(h);
  }
  h = h.amax({2, 3});
  h = nn::linear(h, net.params[p], net.params[p + 1]);
  Tensor loss = nn::cross_entropy(h, y, std::nullopt, "mean", kSmoothing);
  clock.lap(&HlbPhases::forward);
  std::vector<Tensor> grads = autograd::grad({loss}, net.params);
  *loss_out = loss.detach();
  clock.lap(&HlbPhases::backward);
  {
    std::vector<Tensor> done = grads;
    done.insert(done.end(), net.running.begin(), net.running.end());
    done.push_back(*loss_out);
    realize_all(done);
    h = loss = Tensor();  // the forward graph goes with the last holders
  }
  clock.lap(&HlbPhases::realize_grads);
  return grads;
}

}  // namespace

double hlb_step(HlbNet &net, const Tensor &x, const Tensor &y, HlbPhases *phases) {
  return hlb_step_loss(net, x, y, phases).item();
}

Tensor hlb_step_loss(HlbNet &net, const Tensor &x, const Tensor &y, HlbPhases *phases) {
  PhaseClock clock(phases);
  Tensor loss;
  std::vector<Tensor> grads = loss_and_grads(net, x, y, &loss, clock);
  autograd::NoGradGuard no_grad;
  // torch.optim.SGD(nesterov=True, weight_decay): g += wd * p; buf = m * buf + g; p -= lr * (g + m * buf).
  for (size_t i = 0; i < net.params.size(); ++i) {
    Tensor g = grads[i].add(net.params[i].mul(kWeightDecay));
    net.momentum[i].assign(net.momentum[i].mul(kMomentum).add(g));
    net.params[i].assign(net.params[i].sub(g.add(net.momentum[i].mul(kMomentum)).mul(kLr)));
  }
  clock.lap(&HlbPhases::optimizer);
  std::vector<Tensor> state = net.params;
  state.insert(state.end(), net.momentum.begin(), net.momentum.end());
  realize_all(state);
  clock.lap(&HlbPhases::realize_update);
  grads.clear();
  clock.lap(&HlbPhases::release);
  return loss;
}

HlbBench make_hlb_bench(int64_t batch, bool channels_last) {
  HlbBench b;
  b.net = make_hlb_net({64, 256, 512}, batch, 7);
  Tensor::manual_seed(11);
  b.x = Tensor::randn({batch, 3, 32, 32});
  if (channels_last) b.x = b.x.permute({0, 2, 3, 1}).contiguous().permute({0, 3, 1, 2});
  b.x.realize();
  b.channels_last = channels_last;
  b.y = Tensor::randint(0, 10, {batch}).realize();
  return b;
}

reference::HlbSpec HlbBench::torch_spec(int steps, int threads) const {
  reference::HlbSpec spec;
  spec.widths = net.widths;
  for (auto &p : net.params) spec.params.push_back(p.to_host());
  spec.x = x.to_host();
  spec.y = y.to_host();
  spec.steps = steps;
  spec.threads = threads;
  spec.channels_last = channels_last;
  return spec;
}

}  // namespace loom::bench
