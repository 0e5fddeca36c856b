// Where the scheduler cuts a graph into kernels: the nodes that get a
// buffer of their own (realize points), each with the rule that chose it.
#pragma once
#include <vector>

#include "schedule/explain.h"
#include "uop/node_map.h"
#include "uop/uop.h"

namespace loom::schedule {

// A BUFFER or a CONST: no kernel computes it.
bool is_leaf(const uop::UOpRef &u);

// Decides which nodes of `order` (topological, the graph of `outputs`) get
// their own buffer; `why`, when given, gets each one's reason (the first
// rule that chose it).
uop::NodeSet find_realize_points(const std::vector<uop::UOpRef> &order, const std::vector<uop::UOpRef> &outputs,
                                 Reasons *why = nullptr);

}  // namespace loom::schedule
