// loom-bench-step: the hlb-like training step (bench/hlb_step.h) in loom and in
// libtorch, from the same parameters and batch, in one run.
//   loom-bench-step [batch=16] [steps=3] [threads=2]
// Prints per step both losses and times, then medians and their ratio, the
// kernels per step and the executed work against the graph's need.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "hlb_step.h"  // bench/: the loom side
#include "machine.h"
#include "reference_bench.h"  // reference/: the shared timing helpers
#include "reference_hlb.h"  // reference/: the libtorch side

int main(int argc, char **argv) {
  using namespace loom;
  const int64_t batch = argc > 1 ? std::atoll(argv[1]) : 16;
  const int steps = argc > 2 ? std::atoi(argv[2]) : 3;
  const int threads = argc > 3 ? std::atoi(argv[3]) : 2;
  bench::HlbBench b = bench::make_hlb_bench(batch);
  const reference::HlbResult torch = reference::train_hlb(b.torch_spec(steps, threads));

  std::printf("hlb-like step, batch %lld, widths 64/256/512, %s\n", static_cast<long long>(batch), bench::cpu_model().c_str());
  std::vector<double> loom_ms;
  for (int s = 0; s < steps; ++s) {
    reset_run_stats();
    auto t0 = std::chrono::steady_clock::now();
    const double loss = bench::hlb_step(b.net, b.x, b.y);
    loom_ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    const RunStats st = run_stats();
    std::printf("step %d: loss loom %.6f libtorch %.6f | loom %8.1f ms  libtorch %7.1f ms | kernels %lld "
                "(compiled %lld)  work %.3g / needed %.3g = %.3f\n",
                s, loss, torch.losses[s], loom_ms.back(), torch.step_ms[s], static_cast<long long>(st.kernels_run),
                static_cast<long long>(st.kernels_compiled), static_cast<double>(st.work),
                static_cast<double>(st.work_needed),
                static_cast<double>(st.work) / static_cast<double>(std::max<int64_t>(1, st.work_needed)));
    std::fflush(stdout);
  }
  // The first step may compile; the medians skip it when there are more.
  std::vector<double> lm(loom_ms.begin() + (steps > 1), loom_ms.end());
  std::vector<double> tm(torch.step_ms.begin() + (steps > 1), torch.step_ms.end());
  std::printf("median step: loom %.1f ms, libtorch %.1f ms, ratio loom/libtorch %.1fx\n", reference::median(lm),
              reference::median(tm), reference::median(lm) / reference::median(tm));
  return 0;
}
