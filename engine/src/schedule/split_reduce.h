// Split reductions. A kernel that folds a long axis into few outputs runs its
// loop over those outputs on one core at most. split_reductions cuts such a
// kernel in two: the first folds P chunks of a reduced axis into P partials
// per output (P outputs more, so the cores share them), the second folds the
// partials in chunk order and computes the rest of the original kernel.
// Sums then add in another order than one running sum (as PyTorch's
// vectorized and parallel sums do); max and min are exact.
#pragma once
#include "schedule/schedule.h"

namespace loom::schedule {

// Splits each kernel whose one reduction (ADD, MAX or MIN; float32, float64
// or an integer dtype; over views, ALU and casts) has fewer outputs than the
// device's policy names (below) and folds at least split_min_length()
// elements into each. Off under LOOM_NOOPT=1.
void split_reductions(Schedule &sched);

// How the process's device (LOOM_DEVICE) splits: reductions of fewer than
// `outputs` outputs, into at most `partials` partials in all (each output's
// chunks together), each chunk at least `min_chunk` elements; with `lanes`,
// a reduced innermost axis keeps interleaved partials (vector lanes). The
// CPU's 2-64 cores want a few partials of vector lanes; a GPU's
// multiprocessors want thousands of blocks, each of consecutive memory.
struct SplitPolicy {
  int64_t outputs, partials, min_chunk;
  bool lanes;
};
inline constexpr SplitPolicy kCpuSplit{16, 32, 4096, true};
inline constexpr SplitPolicy kGpuSplit{4096, 2048, 4096, false};
const SplitPolicy &split_policy();
// LOOM_SPLIT_MIN_LENGTH, default 2^15; at 0 every reduction that can be
// split is, whatever its outputs, into chunks of any length (tests send small
// kernels down the path with it). Returns the previous value.
int64_t set_split_min_length(int64_t n);
int64_t split_min_length();

}  // namespace loom::schedule
