// The loom side of the index, scan, sort and write workloads (the libtorch
// side: reference::time_torch_ops). Shared by loom-bench-ops and
// loom-bench-table.
#pragma once
#include <string>
#include <utility>
#include <vector>

namespace loom::bench {

// Median milliseconds of each workload over `runs` runs after a warm-up, in
// reference::time_torch_ops' order and names.
std::vector<std::pair<std::string, double>> time_loom_ops(int runs);

}  // namespace loom::bench
