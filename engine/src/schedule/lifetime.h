// Buffer lifetimes: which buffers a schedule makes only for its own kernels.
// An intermediate that no one outside the graph being realized can still ask
// for (no tensor, no saved value, no other graph holds it or a lazy node that
// reads it) is transient: the executor frees its memory after the last kernel
// that reads it, so a long graph (a whole evaluation pass realized at once)
// needs memory for its live values only, and later schedules reuse the space.
#pragma once
#include <memory>
#include <vector>

#include "uop/node_map.h"
#include "uop/uop.h"

namespace loom::schedule {

struct Schedule;

// Per entry of `sched.realizes`, whether its buffer is kept (the node is
// remembered) or transient. `raw_sink` and `sink` are the SINKs of the graph
// as given and after substitution of realized nodes; `donated` the writes
// whose stores go into an existing buffer (never transient). Decided by
// counting strong references, as find_donations does: a node is held outside
// when it has more than its parents in the two graphs and the schedule's own
// entries give it. So for a cached structure scheduled under the reference
// counts of an earlier realize, the decision is that realize's
// (schedule/schedule_cache.h). `graph_size`: about how many nodes the graphs
// have (a size hint for its tables).
using Kept = std::vector<bool>;
Kept find_kept(const uop::UOpRef &raw_sink, const uop::UOpRef &sink,
               const uop::NodeMap<std::shared_ptr<uop::Buffer>> &donated, const Schedule &sched, size_t graph_size);

// Moves the entries `kept` marks transient out of `sched.realizes` (they are
// not remembered) and their buffers into `sched.transient`.
void drop_transient(Schedule &sched, const Kept &kept);

}  // namespace loom::schedule
