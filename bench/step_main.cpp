// loom-bench-step: times the hlb-like training step (see hlb_step.h).
//   loom-bench-step [batch] [steps]
// Prints per step: wall time, kernels run, executed and needed work.
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "hlb_step.h"

int main(int argc, char **argv) {
  using namespace loom;
  const int64_t batch = argc > 1 ? std::atoll(argv[1]) : 16;
  const int steps = argc > 2 ? std::atoi(argv[2]) : 3;
  bench::HlbNet net = bench::make_hlb_net({64, 256, 512}, batch, 7);
  Tensor x = Tensor::randn({batch, 3, 32, 32}).realize();
  Tensor y = Tensor::randint(0, 10, {batch}).realize();
  for (int s = 0; s < steps; ++s) {
    reset_run_stats();
    auto t0 = std::chrono::steady_clock::now();
    double loss = bench::hlb_step(net, x, y);
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    RunStats st = run_stats();
    std::printf("step %d: loss %.5f  %.1f ms  kernels %lld  compiled %lld\n", s, loss, ms,
                static_cast<long long>(st.kernels_run), static_cast<long long>(st.kernels_compiled));
    std::fflush(stdout);
  }
  return 0;
}
