// The scheduler's first pass: nodes an earlier realize computed (and that are
// still alive) become views of their buffers, so a graph that still refers to
// them (a backward pass over its forward) reads them instead of recomputing.
#pragma once
#include <memory>
#include <utility>
#include <vector>

#include "uop/uop.h"

namespace loom::schedule {

using uop::UOpRef;

// Each changed node with its substitute, as weak references: the donation
// check counts strong ones.
using Rebuilt = std::vector<std::pair<std::weak_ptr<const uop::UOp>, std::weak_ptr<const uop::UOp>>>;

// Replaces realized nodes by their buffers, bottom-up over `order` (the
// topological order of a root). Returns the root's substitute: the root
// itself when nothing in the graph was realized.
UOpRef substitute_realized(const std::vector<const UOpRef *> &order, Rebuilt &rebuilt);
// `u` is computed: later graphs read `buf_view` instead (UOp::realized, so
// the buffer view is released with the node).
void remember_realized(const UOpRef &u, const UOpRef &buf_view);

}  // namespace loom::schedule
