// Every LOOM_* environment variable loom reads, read here and nowhere else,
// all at once on first use: a variable set after that changes nothing (the
// switches that may change at run time have setters of their own). The
// names in knobs.cpp are the README's "Environment knobs" list, in its order
// (ci/check_knobs.sh holds them together); the README says what each does.
#pragma once
#include <cstdint>
#include <string>

namespace loom::knobs {

int debug();                    // LOOM_DEBUG: the level of what realize prints (0)
const std::string &viz();       // LOOM_VIZ: "" off, else the trace file (1: loom_viz.json)
const std::string &cache_dir(); // LOOM_CACHE_DIR: "" when unset
const std::string &device();    // LOOM_DEVICE: "CPU" when unset
int beam();                     // LOOM_BEAM: the search width (0: off)
bool extern_gemm();             // LOOM_EXTERN: library GEMMs (true unless 0)
int64_t gemm_min_macs();        // LOOM_GEMM_MIN_MACS (1 << 22)
int64_t split_min_length();     // LOOM_SPLIT_MIN_LENGTH (1 << 15)
bool jit();                     // LOOM_JIT: captures (true unless 0)
bool graphs();                  // LOOM_GRAPHS: JIT replays as device graphs (false unless 1)
bool noopt();                   // LOOM_NOOPT: kernel optimizations off (false unless nonzero)
int threads();                  // LOOM_THREADS: the CPU device's threads (0, the default: one per core)
const std::string &march();     // LOOM_MARCH: the -march CPU kernels compile for ("native" when unset)

}  // namespace loom::knobs
