// The scheduler's donation pass: a WRITE whose base is a realized buffer that
// nothing else can still read stores into that buffer, with no copy (an
// optimizer's in-place update, a BatchNorm running statistic).
#pragma once
#include <memory>
#include <vector>

#include "uop/node_map.h"
#include "uop/uop.h"

namespace loom::schedule {

using uop::UOpRef;

// Nodes that always get their own buffer (and so their own kernels): WRITE,
// CONTIGUOUS, SCAN and SORT.
bool always_realized(const uop::UOp *u);
// A WRITE that replaces every element of its base, in row-major order.
bool is_full_overwrite(const uop::UOp *w);

// The donated writes with the buffer each stores into. `raw` are the graphs
// as given, `outputs` the same after substitution of realized nodes (the
// graphs that run). Decided by counting strong references, so the caller
// must hold no extra reference to the graphs' nodes while it runs.
// `graph_size`: about how many nodes the graphs have (a size hint for its tables).
uop::NodeMap<std::shared_ptr<uop::Buffer>> find_donations(const std::vector<UOpRef> &raw,
                                                          const std::vector<UOpRef> &outputs, size_t graph_size);
// The buffer a donated WRITE stores into: its base's.
const std::shared_ptr<uop::Buffer> &donated_buffer(const uop::UOp *write);

}  // namespace loom::schedule
