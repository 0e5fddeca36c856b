// The scheduler: cuts a lazy graph into kernels. Elementwise chains, a
// reduction's elementwise prologue and its elementwise epilogue fuse into one
// kernel; movement ops become index math in the kernel that reads them.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "uop/uop.h"

namespace loom::schedule {

using uop::UOpRef;

struct ScheduleItem {
  // SINK(STORE(DEFINE_GLOBAL 0, value)): value is a graph over VIEW(DEFINE_GLOBAL k),
  // VIEW(CONST), ALU, CAST, VIEW and REDUCE_AXIS nodes; the store is row-major.
  UOpRef ast;
  std::vector<std::shared_ptr<uop::Buffer>> bufs;  // slot k -> buffer; bufs[0] is the output
  std::string name;                               // from structure: "E_..." elementwise, "r_..." reduce
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
};

Schedule create_schedule(const std::vector<UOpRef> &outputs);
// After the items ran: later schedules read these buffers instead of recomputing.
void commit(const Schedule &sched);

}  // namespace loom::schedule
