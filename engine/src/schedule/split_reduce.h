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
// or an integer dtype; over views, ALU and casts) has fewer than
// kSplitOutputs outputs and folds at least split_min_length() elements into
// each. Off under LOOM_NOOPT=1.
void split_reductions(Schedule &sched);

inline constexpr int64_t kSplitOutputs = 16;
// LOOM_SPLIT_MIN_LENGTH, default 2^15; at 0 every reduction that can be
// split is, whatever its outputs, into chunks of any length (tests send small
// kernels down the path with it). Returns the previous value.
int64_t set_split_min_length(int64_t n);
int64_t split_min_length();

}  // namespace loom::schedule
