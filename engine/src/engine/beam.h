// LOOM_BEAM=n: the optimize pass's choice replaced by a measured one. For
// each kernel the engine compiles, up to n candidate upcasts
// (codegen::upcast_candidates: the pass's own first) are compiled and timed
// on scratch buffers of the kernel's sizes, every element 1; the fastest is
// kept in the disk cache (<cache dir>/beam/, one file per kernel and n), so
// later processes read it instead of timing again. Every candidate computes
// the same values (an upcast never changes a reduction's order), so the
// choice only moves time. A kernel whose heuristic version runs in under
// 0.05 ms keeps it untimed against the others. Off (0 or 1, the default):
// the pass's heuristic.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "codegen/pipeline.h"
#include "schedule/schedule.h"

namespace loom::engine {

// The width LOOM_BEAM asks for (read on every call; 0 when unset).
int beam_width();
// Sets the width (LOOM_BEAM at start; 0 turns the search off). Returns the previous one.
int set_beam_width(int width);
// The upcast for `item`'s kernel, or nullopt when LOOM_BEAM is off or the
// kernel offers no choice.
std::optional<codegen::Upcast> beam_upcast(const schedule::ScheduleItem &item);
// Where the choice for `item` at width n is cached.
std::string beam_cache_file(const schedule::ScheduleItem &item, int n);

// How a compiled program is launched: its outermost loop's trip count, and
// whether that loop is split across the cores (enough work).
int64_t launch_global_size(const codegen::KernelSpec &p);
bool launch_parallel(const codegen::KernelSpec &p);

}  // namespace loom::engine
