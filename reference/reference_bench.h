// The libtorch side of bench/ops_main.cpp: the same index, scan, sort and
// write workloads timed in libtorch. Torch-free header.
#pragma once
#include <string>
#include <vector>

namespace loom::reference {

struct OpTiming {
  std::string name;
  double ms;  // median of the runs
};
// Times each workload `runs` times with `threads` intra-op threads (0: as is).
// Workloads: "copy" (50000x3072 float32 clone), "index_select", "gather",
// "scatter_add", "row_write", "cumsum", "sort" (see bench/ops_main.cpp).
std::vector<OpTiming> time_torch_ops(int runs, int threads);

}  // namespace loom::reference
