// loom-bench-memory: the training loop of the memory issue, 1000 iterations of
// (matmul 64x256 @ 256x256, relu, sum, backward, w.assign(w - lr * grad)),
// printing resident memory, live device buffers and kernels compiled at
// iterations 1, 10, 100 and 1000.
#include <cstdio>
#include <fstream>
#include <string>

#include "loom/autograd.h"
#include "loom/tensor.h"

namespace {
double rss_mb() {
  std::ifstream f("/proc/self/statm");
  long pages = 0, resident = 0;
  f >> pages >> resident;
  return static_cast<double>(resident) * 4096.0 / 1e6;
}
}  // namespace

int main() {
  using namespace loom;
  Tensor::manual_seed(1);
  Tensor x = Tensor::randn({64, 256}).realize();
  Tensor w = Tensor::randn({256, 256}).mul(0.05).realize().requires_grad_();
  for (int it = 1; it <= 1000; ++it) {
    Tensor loss = x.matmul(w).relu().sum();
    Tensor g = autograd::grad({loss}, {w})[0];
    {
      autograd::NoGradGuard no_grad;
      w.assign(w.sub(g.mul(1e-4)));
    }
    w.realize();
    if (it == 1 || it == 10 || it == 100 || it == 1000) {
      const MemoryStats m = memory_stats();
      std::printf("iteration %4d: RSS %.1f MB, live buffers %lld (%lld bytes), kernels compiled so far %lld\n", it,
                  rss_mb(), static_cast<long long>(m.live_buffers), static_cast<long long>(m.live_bytes),
                  static_cast<long long>(run_stats().kernels_compiled));
    }
  }
  return 0;
}
