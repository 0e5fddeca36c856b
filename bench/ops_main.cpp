// loom-bench-ops: index, scan, sort and in-place write workloads in loom and
// in libtorch, in one run, printed as a table of ratios.
//   loom-bench-ops [runs=5] [threads=2]
// Workloads (float32): index_select of (50000, 3072) rows by a random
// permutation (and a copy of the same bytes), gather and scatter_add along
// dim 1 of 4096^2 with a random index, one-row write into 4096^2, cumsum of
// 4096^2 along dim 1, sort of 2^20 values. Times are medians after a warm-up
// run (which compiles).
#include <cstdio>
#include <cstdlib>
#include <map>

#include "index_ops.h"
#include "reference_bench.h"

int main(int argc, char **argv) {
  using namespace loom;
  const int runs = argc > 1 ? std::atoi(argv[1]) : 5;
  const int threads = argc > 2 ? std::atoi(argv[2]) : 2;
  std::map<std::string, double> torch_ms;
  for (auto &t : reference::time_torch_ops(runs, threads)) torch_ms[t.name] = t.ms;
  const auto loom_ms = bench::time_loom_ops(runs);

  std::printf("%-14s %12s %12s %10s\n", "workload", "loom ms", "libtorch ms", "loom/torch");
  for (auto &[name, ms] : loom_ms)
    std::printf("%-14s %12.4f %12.4f %9.2fx\n", name.c_str(), ms, torch_ms[name], ms / torch_ms[name]);
  std::printf("index_select / loom copy of the same bytes: %.2fx\n", loom_ms[1].second / loom_ms[0].second);
  return 0;
}
