// The libtorch side of the benchmarks in bench/: the same workloads timed in
// libtorch, and the timing helpers both sides share. Torch-free header.
#pragma once
#include <algorithm>
#include <chrono>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace loom::reference {

// The middle value (the upper one of an even count); 0 when empty.
inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// The median over `runs` runs of the time of one call of f, each run timing
// `reps` calls back to back (for calls too short for one clock reading), after
// one warm-up call (which compiles).
inline double median_ms(int runs, const std::function<void()> &f, int reps = 1) {
  std::vector<double> t;
  f();
  for (int i = 0; i < runs; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int r = 0; r < reps; ++r) f();
    t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / reps);
  }
  return median(std::move(t));
}

// Calls per timed run of the one-row write, which takes microseconds.
inline constexpr int kRowWriteReps = 1000;

struct OpTiming {
  std::string name;
  double ms;  // median of the runs
};
// Times each workload `runs` times with `threads` intra-op threads (0: as is).
// Workloads: "copy" (50000x3072 float32 clone), "index_select", "gather",
// "scatter_add", "row_write", "cumsum", "sort" (see bench/ops_main.cpp).
std::vector<OpTiming> time_torch_ops(int runs, int threads);

// The workloads of bench/table_main.cpp, timed in libtorch (the loom side
// builds the same computation on the same shapes):
//   "chain"       sigmoid(exp(relu(a*b+c)*0.5) - a), a, b, c of 2^24 float32
//   "neg"         a.neg()                 "clone"   a.clone()
//   "sum_dim1"    x.sum(1), x 4096^2      "sum_dim0" x.sum(0)      "sum_all" x.sum()
//   "matmul512", "matmul1024", "matmul2048"   square float32 matmul
//   "conv_fwd"    conv2d(x (64,64,16,16), w (256,64,3,3), padding 1)
//   "conv_fwdbwd" the same, then the gradients for x and w of its output
//                 against a random upstream gradient (64, 256, 16, 16)
//   "bn_fwdbwd"   training-mode batch_norm of x (64,64,32,32) with weight and bias, then the
//                 gradients for all three against a random upstream gradient
//   "conv_fwd_cl", "conv_fwdbwd_cl", "bn_fwdbwd_cl"   the same, every 4-d tensor channels_last
// Unknown names are skipped.
std::vector<OpTiming> time_torch_table(int runs, int threads, const std::vector<std::string> &names);

}  // namespace loom::reference
