// The CPU device: kernels are C functions
//   void <name>(void **bufs, int64_t start, int64_t end)
// compiled by the system C compiler (many to one shared object, one compiler
// run per batch of cache misses), loaded with
// dlopen, and run over [start, end) of their outermost loop on a thread pool.
#pragma once
#include <functional>

#include "runtime/device.h"

namespace loom::runtime::cpu {

Device &device();
// Runs job(i) for i in [0, threads) on the pool's threads (i == 0 on the caller).
void parallel_run(int threads, const std::function<void(int)> &job);
int pool_threads();
// The widest float vector, in bytes, of the -march the kernels compile for
// (LOOM_MARCH, default native): the CPU target's group width. Raises when
// the compiler rejects the -march or this machine cannot run it.
int64_t vector_bytes();
// Whether that -march has fused multiply-add instructions (x86's FMA3,
// AArch64's): the CPU target's Target::fma.
bool fused_multiply_add();
// This machine's level-2 cache per core in bytes (the CPU target's
// Target::l2_bytes); 0 where the system does not say.
int64_t l2_cache_bytes();

}  // namespace loom::runtime::cpu
