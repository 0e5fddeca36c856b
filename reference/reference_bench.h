// The libtorch side of bench/ops_main.cpp: the same index, scan, sort and
// write workloads timed in libtorch. Torch-free header.
#pragma once
#include <algorithm>
#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace loom::reference {

// The median time of `runs` calls of f, after one warm-up call (which compiles).
inline double median_ms(int runs, const std::function<void()> &f) {
  std::vector<double> t;
  f();
  for (int i = 0; i < runs; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

struct OpTiming {
  std::string name;
  double ms;  // median of the runs
};
// Times each workload `runs` times with `threads` intra-op threads (0: as is).
// Workloads: "copy" (50000x3072 float32 clone), "index_select", "gather",
// "scatter_add", "row_write", "cumsum", "sort" (see bench/ops_main.cpp).
std::vector<OpTiming> time_torch_ops(int runs, int threads);

}  // namespace loom::reference
