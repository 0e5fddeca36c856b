// Cooperative fibers on the calling thread: the CUDA emulator runs a block's
// threads as fibers so that __syncthreads can switch between them.
#pragma once

#include <functional>

namespace loom::runtime::cuda {

// Runs body(0) .. body(n - 1) as fibers, in rounds: each fiber in turn runs
// until it calls fiber_yield() or returns, then the next one that has not
// returned resumes. Returns when every one has returned. Each fiber has a
// 256 KiB stack; `body` must not throw.
void run_fibers(unsigned n, const std::function<void(unsigned)> &body);

// Inside a fiber of run_fibers: lets the other fibers run to their next yield.
void fiber_yield();

}  // namespace loom::runtime::cuda
