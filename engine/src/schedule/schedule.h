// The scheduler, a pure function of the graph: cuts it into kernels.
// Elementwise chains, a reduction's elementwise prologue and its elementwise
// epilogue fuse into one kernel; movement ops become index math in the kernel
// that reads them; no reduction is computed twice (see find_realize_points).
// A WRITE is a copy of its base (none when the base's buffer is written in
// place) and then a kernel of stores; SCAN and SORT get kernels of their own.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "uop/uop.h"

namespace loom::schedule {

using uop::UOpRef;

struct Explanation;  // schedule/explain.h
struct GemmShape;    // schedule/gemm_shape.h

struct ScheduleItem {
  // SINK(STORE(DEFINE_GLOBAL 0, value)): value is a graph over VIEW(DEFINE_GLOBAL k),
  // VIEW(CONST), VIEW(DEFINE_VAR), ALU, CAST, VIEW, REDUCE_AXIS, GATHER (and a root SCAN or SORT);
  // the store is row-major (arg ShapeTracker), or a WRITE's stores (arg
  // WriteArg, src {DEFINE_GLOBAL 0, value[, index]}) into a buffer written before.
  UOpRef ast;
  shape::PoolVector<std::shared_ptr<uop::Buffer>> bufs;  // slot k -> buffer; bufs[0] is the output
  shape::PoolVector<UOpRef> vars;  // DEFINE_VAR slot k -> the runtime scalar (a CONST with a Param) bound to it
  // Per slot: the elements a launch moves the buffer's pointer by (schedule/offsets.h).
  shape::PoolVector<int64_t> shifts;
  std::string name;  // from structure: "E_" elementwise, "r_" reduce, "s_" scan, "sort_", "w_" stores
  // The canonical GEMM the AST is (set by mark_gemms, schedule/gemm.h); null for any other kernel.
  std::shared_ptr<const GemmShape> gemm;
};

struct Schedule {
  std::vector<ScheduleItem> items;  // in dependency order
  std::vector<UOpRef> results;      // per requested output: a VIEW of a realized buffer
  // Lazy nodes and the buffer views that hold them once the items have run:
  // every node that got a buffer, intermediates included, so a later schedule
  // over the same graph (a backward pass over a forward) reads them.
  std::vector<std::pair<UOpRef, UOpRef>> realizes;
  // ALU work the graph needs with every op computed once (see RunStats).
  int64_t work_needed = 0;
  // Buffers of intermediates no one can ask for after this schedule
  // (schedule/lifetime.h): not in `realizes`; the executor frees each after
  // the last item that reads it.
  std::vector<std::shared_ptr<uop::Buffer>> transient;
  // The graph's structure equalled an earlier one's: its kernels were not cut
  // again but taken from the schedule cache (schedule/schedule_cache.h).
  bool cached = false;
  // Its writes' donations were checked on the graph (schedule/donate.h), not
  // taken from the cache for an equal structure under equal reference counts.
  bool donations_checked = false;
  // Why the graph was cut as it was (schedule/explain.h); null unless explaining.
  std::shared_ptr<Explanation> explanation;
};

Schedule create_schedule(const std::vector<UOpRef> &outputs);
// Each buffer slot's element dtype: bufs[k]->dtype.
std::vector<DType> buf_dtypes(const ScheduleItem &item);
// After the items ran: later schedules read these buffers instead of recomputing.
void commit(const Schedule &sched);

}  // namespace loom::schedule
