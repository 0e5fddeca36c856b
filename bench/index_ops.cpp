#include "index_ops.h"

#include "loom/tensor.h"
#include "reference_bench.h"

namespace loom::bench {

std::vector<std::pair<std::string, double>> time_loom_ops(int runs) {
  using reference::median_ms;
  std::vector<std::pair<std::string, double>> out;
  Tensor::manual_seed(0);
  Tensor rows = Tensor::randn({50000, 3072}).realize();
  Tensor perm = Tensor::randperm(50000).realize();
  out.push_back({"copy", median_ms(runs, [&] { rows.add(0.0).realize(); })});
  out.push_back({"index_select", median_ms(runs, [&] { rows.index_select(0, perm).realize(); })});
  rows = Tensor();
  Tensor sq = Tensor::randn({4096, 4096}).realize();
  Tensor idx = Tensor::randint(0, 4096, {4096, 4096}).realize();
  out.push_back({"gather", median_ms(runs, [&] { sq.gather(1, idx).realize(); })});
  Tensor acc = Tensor::zeros({4096, 4096}).realize();
  out.push_back({"scatter_add", median_ms(runs, [&] { acc.scatter_add(1, idx, sq).realize(); })});
  Tensor row = Tensor::randn({1, 4096}).realize();
  out.push_back({"row_write", median_ms(runs, [&] {
                   acc.slice(0, 7, 8).assign(row);
                   acc.realize();
                 }, reference::kRowWriteReps)});
  out.push_back({"cumsum", median_ms(runs, [&] { sq.cumsum(1).realize(); })});
  Tensor million = Tensor::randn({1 << 20}).realize();
  out.push_back({"sort", median_ms(runs, [&] { million.sort(0).first.realize(); })});
  return out;
}

}  // namespace loom::bench
