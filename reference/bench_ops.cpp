// The libtorch twin of bench/ops_main.cpp (see reference/reference_bench.h).
#include <ATen/Parallel.h>

#include "reference_bench.h"
#include "torch_ops.h"

namespace loom::reference {

std::vector<OpTiming> time_torch_ops(int runs, int threads) {
  return torch_call("time_torch_ops", [&] {
    if (threads > 0) at::set_num_threads(threads);
    at::manual_seed(0);
    std::vector<OpTiming> out;
    const at::Tensor rows = at::randn({50000, 3072});
    const at::Tensor perm = at::randperm(50000);
    out.push_back({"copy", median_ms(runs, [&] { (void)rows.clone(); })});
    out.push_back({"index_select", median_ms(runs, [&] { (void)rows.index_select(0, perm); })});
    const at::Tensor sq = at::randn({4096, 4096});
    const at::Tensor idx = at::randint(0, 4096, {4096, 4096});
    out.push_back({"gather", median_ms(runs, [&] { (void)sq.gather(1, idx); })});
    at::Tensor acc = at::zeros({4096, 4096});
    out.push_back({"scatter_add", median_ms(runs, [&] { (void)acc.scatter_add(1, idx, sq); })});
    const at::Tensor row = at::randn({4096});
    out.push_back({"row_write", median_ms(runs, [&] { acc[7].copy_(row); }, kRowWriteReps)});
    out.push_back({"cumsum", median_ms(runs, [&] { (void)sq.cumsum(1); })});
    const at::Tensor million = at::randn({1 << 20});
    out.push_back({"sort", median_ms(runs, [&] { (void)million.sort(0); })});
    return out;
  });
}

}  // namespace loom::reference
