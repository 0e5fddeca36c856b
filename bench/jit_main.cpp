// loom-bench-jit: the hlb-like training step (bench/hlb_step.h) run eagerly
// and then under loom::Jit, from the same weights and batch, in one run.
//   loom-bench-jit [batch=16] [steps=8]
// Prints per step both losses (bitwise equal or not), wall times and host
// times (the wall time outside kernel launches: building, scheduling,
// binding), the kernel time, and the host-time ratio; then the
// peak device memory of a step (the model's state included) eagerly, where
// intermediates are freed after their last use, and on replay, where they
// live in the capture's arena, planned by lifetime; and what the arena would
// take unplanned.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "hlb_step.h"
#include "loom/jit.h"
#include "machine.h"

namespace {
double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}
double mb(int64_t bytes) { return static_cast<double>(bytes) / (1 << 20); }
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

struct Side {
  std::vector<loom::HostTensor> losses;
  std::vector<double> ms, kernel_ms;
  int64_t state_bytes = 0, peak_bytes = 0;  // peak: the most live during steps 2 on
};

// `jit` null: eager steps. Each side builds its own model, so one side's
// memory is gone before the other's is measured.
Side run(int64_t batch, int steps, bool use_jit, loom::Jit::Info *info) {
  using namespace loom;
  Side side;
  bench::HlbBench b = bench::make_hlb_bench(batch);
  side.state_bytes = memory_stats().live_bytes;
  auto step = [&](const JitArgs &a) {
    return std::vector<Tensor>{bench::hlb_step_loss(b.net, a.tensors[0], a.tensors[1])};
  };
  Jit jit(step, "hlb_step");
  for (int s = 0; s < steps; ++s) {
    reset_peak_memory();
    reset_run_stats();
    auto t0 = std::chrono::steady_clock::now();
    Tensor loss = use_jit ? jit({b.x, b.y})[0] : bench::hlb_step_loss(b.net, b.x, b.y);
    side.ms.push_back(ms_since(t0));
    side.kernel_ms.push_back(run_stats().kernel_seconds * 1e3);
    if (s >= 2) side.peak_bytes = std::max(side.peak_bytes, memory_stats().peak_bytes);
    side.losses.push_back(loss.to_host());
  }
  if (info) *info = jit.info();
  return side;
}
}  // namespace

int main(int argc, char **argv) {
  using namespace loom;
  const int64_t batch = argc > 1 ? std::atoll(argv[1]) : 16;
  const int steps = argc > 2 ? std::max(3, std::atoi(argv[2])) : 8;
  std::printf("hlb-like step, batch %lld, widths 64/256/512, %s\n", static_cast<long long>(batch),
              bench::cpu_model().c_str());
  const Side eager = run(batch, steps, false, nullptr);
  Jit::Info info;
  const Side jitted = run(batch, steps, true, &info);
  std::vector<double> eager_host, jit_host, eager_kernel, jit_kernel;
  for (int s = 0; s < steps; ++s) {
    const HostTensor &a = eager.losses[s], &b = jitted.losses[s];
    const bool same = std::memcmp(a.storage->data(), b.storage->data(), a.storage->size()) == 0;
    const double eh = eager.ms[s] - eager.kernel_ms[s], jh = jitted.ms[s] - jitted.kernel_ms[s];
    std::printf("step %d (jit: %s): loss eager %.7f jit %.7f (%s) | wall eager %7.1f jit %7.1f ms | host eager "
                "%7.2f jit %7.2f ms | kernels eager %7.1f jit %7.1f ms\n",
                s, s == 0 ? "eager" : s == 1 ? "capture" : "replay", a.get(0), b.get(0),
                same ? "bitwise equal" : "DIFFER", eager.ms[s], jitted.ms[s], eh, jh, eager.kernel_ms[s],
                jitted.kernel_ms[s]);
    if (s >= 2) {
      eager_host.push_back(eh), jit_host.push_back(jh);
      eager_kernel.push_back(eager.kernel_ms[s]), jit_kernel.push_back(jitted.kernel_ms[s]);
    }
  }
  const double meh = median(eager_host), mjh = median(jit_host);
  std::printf("median of steps 2 on: host time eager %.2f ms, jit replay %.2f ms (eager/jit %.1fx); kernel time "
              "eager %.1f ms, jit %.1f ms\n",
              meh, mjh, meh / mjh, median(eager_kernel), median(jit_kernel));
  std::printf("capture: %lld kernels, %lld host steps\n", static_cast<long long>(info.kernels),
              static_cast<long long>(info.host_steps));
  std::printf("peak device memory of a step, the model's %.1f MiB of state included: eager %.1f MiB, jit replay "
              "%.1f MiB\n",
              mb(eager.state_bytes), mb(eager.peak_bytes), mb(jitted.peak_bytes));
  std::printf("the capture's intermediates: %.1f MiB each in its own buffer, %.1f MiB planned (offsets in one arena "
              "by lifetime), %.1f MiB live at once at most\n",
              mb(info.intermediate_bytes), mb(info.planned_bytes), mb(info.peak_live_bytes));
  return 0;
}
