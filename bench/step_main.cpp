// loom-bench-step: the hlb-like training step (bench/hlb_step.h) in loom and in
// libtorch, from the same parameters and batch, in one run.
//   loom-bench-step [batch=16] [steps=3] [threads=2]
// Prints per step both losses and times, then medians and their ratio, the
// kernels per step and the executed work against the graph's need, loom's
// host time (the step's wall time minus its kernels' time) and its share per
// kernel launch, and how many of the step's realizes hit the schedule cache;
// then the host time by phase of the step (bench::HlbPhases).
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
  std::vector<double> loom_ms, host_ms, per_kernel_us;
  std::vector<bench::HlbPhases> phases;
  for (int s = 0; s < steps; ++s) {
    reset_run_stats();
    bench::HlbPhases step_phases;
    auto t0 = std::chrono::steady_clock::now();
    const double loss = bench::hlb_step(b.net, b.x, b.y, &step_phases);
    loom_ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    const RunStats st = run_stats();
    host_ms.push_back(loom_ms.back() - st.kernel_seconds * 1e3);
    per_kernel_us.push_back(host_ms.back() * 1e3 / static_cast<double>(std::max<int64_t>(1, st.kernels_run)));
    std::printf("step %d: loss loom %.6f libtorch %.6f | loom %8.1f ms (host %.2f ms: %.2f in realize, %.1f us per "
                "kernel)  libtorch %7.1f ms | kernels %lld (compiled %lld)  schedules %lld (cached %lld)  work %.3g / "
                "needed %.3g = %.3f\n",
                s, loss, torch.losses[s], loom_ms.back(), host_ms.back(),
                (st.realize_seconds - st.kernel_seconds) * 1e3, per_kernel_us.back(), torch.step_ms[s],
                static_cast<long long>(st.kernels_run), static_cast<long long>(st.kernels_compiled),
                static_cast<long long>(st.schedules), static_cast<long long>(st.schedule_hits),
                static_cast<double>(st.work), static_cast<double>(st.work_needed),
                static_cast<double>(st.work) / static_cast<double>(std::max<int64_t>(1, st.work_needed)));
    std::fflush(stdout);
    phases.push_back(step_phases);
  }
  // The first step may compile; the medians skip it when there are more.
  std::vector<double> lm(loom_ms.begin() + (steps > 1), loom_ms.end());
  std::vector<double> tm(torch.step_ms.begin() + (steps > 1), torch.step_ms.end());
  std::printf("median step: loom %.1f ms, libtorch %.1f ms, ratio loom/libtorch %.1fx\n", reference::median(lm),
              reference::median(tm), reference::median(lm) / reference::median(tm));
  std::vector<double> hm(host_ms.begin() + (steps > 1), host_ms.end());
  std::vector<double> km(per_kernel_us.begin() + (steps > 1), per_kernel_us.end());
  std::printf("median host time per step: loom %.2f ms (%.1f us per kernel launch)\n", reference::median(hm),
              reference::median(km));
  auto phase = [&](double bench::HlbPhases::*f) {
    std::vector<double> v;
    for (size_t s = steps > 1; s < phases.size(); ++s) v.push_back(phases[s].*f);
    return reference::median(v);
  };
  std::printf("median host time per step by phase: forward graph %.2f ms, autograd %.2f, realize the gradients "
              "%.2f (freeing the forward graph included), optimizer graph %.2f, realize the update %.2f, release "
              "%.2f\n",
              phase(&bench::HlbPhases::forward), phase(&bench::HlbPhases::backward),
              phase(&bench::HlbPhases::realize_grads), phase(&bench::HlbPhases::optimizer),
              phase(&bench::HlbPhases::realize_update), phase(&bench::HlbPhases::release));
  return 0;
}
