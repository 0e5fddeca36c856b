// What the benchmarks print about the machine they ran on.
#pragma once
#include <string>

namespace loom::bench {

// The CPU's model name and its widest vector extension ("avx512f", "avx2" or
// "no avx2"), from /proc/cpuinfo.
std::string cpu_model();
// GB/s (bytes read + bytes written per second) of memcpy from one
// preallocated 64 MiB buffer into another, split over `threads` threads; the
// best of several runs.
double copy_bandwidth_gbs(int threads);

}  // namespace loom::bench
