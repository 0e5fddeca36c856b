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
#include <functional>
#include <map>

#include "loom/tensor.h"
#include "reference_bench.h"

int main(int argc, char **argv) {
  using namespace loom;
  const int runs = argc > 1 ? std::atoi(argv[1]) : 5;
  const int threads = argc > 2 ? std::atoi(argv[2]) : 2;
  std::map<std::string, double> torch_ms;
  for (auto &t : reference::time_torch_ops(runs, threads)) torch_ms[t.name] = t.ms;

  std::vector<std::pair<std::string, double>> loom_ms;
  Tensor::manual_seed(0);
  Tensor rows = Tensor::randn({50000, 3072}).realize();
  Tensor perm = Tensor::randperm(50000).realize();
  using reference::median_ms;
  loom_ms.push_back({"copy", median_ms(runs, [&] { rows.add(0.0).realize(); })});
  loom_ms.push_back({"index_select", median_ms(runs, [&] { rows.index_select(0, perm).realize(); })});
  rows = Tensor();
  Tensor sq = Tensor::randn({4096, 4096}).realize();
  Tensor idx = Tensor::randint(0, 4096, {4096, 4096}).realize();
  loom_ms.push_back({"gather", median_ms(runs, [&] { sq.gather(1, idx).realize(); })});
  Tensor acc = Tensor::zeros({4096, 4096}).realize();
  loom_ms.push_back({"scatter_add", median_ms(runs, [&] { acc.scatter_add(1, idx, sq).realize(); })});
  Tensor row = Tensor::randn({1, 4096}).realize();
  loom_ms.push_back({"row_write", median_ms(runs, [&] {
                       acc.slice(0, 7, 8).assign(row);
                       acc.realize();
                     }, reference::kRowWriteReps)});
  loom_ms.push_back({"cumsum", median_ms(runs, [&] { sq.cumsum(1).realize(); })});
  Tensor million = Tensor::randn({1 << 20}).realize();
  loom_ms.push_back({"sort", median_ms(runs, [&] { million.sort(0).first.realize(); })});

  std::printf("%-14s %12s %12s %10s\n", "workload", "loom ms", "libtorch ms", "loom/torch");
  for (auto &[name, ms] : loom_ms)
    std::printf("%-14s %12.4f %12.4f %9.2fx\n", name.c_str(), ms, torch_ms[name], ms / torch_ms[name]);
  double copy = loom_ms[0].second;
  std::printf("index_select / loom copy of the same bytes: %.2fx\n", loom_ms[1].second / copy);
  return 0;
}
