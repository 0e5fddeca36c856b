// Why the scheduler cut a graph where it did, for the viewer (LOOM_VIZ):
// the graph it scheduled (realized sources already BUFFER nodes), each node's
// kernels, and for each node that got its own buffer the rule that gave it
// one. Built only while explaining is on, and only when a graph's structure
// is cut (a schedule-cache hit shares the explanation of the graph it
// matched); the scheduler's decisions never depend on it.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "uop/node_map.h"
#include "uop/uop.h"

namespace loom::schedule {

struct ExplainedNode {
  std::string op, dtype, arg;  // arg as UOp::str prints it, cut to 96 characters
  std::vector<int64_t> shape;
  std::vector<int> src;     // positions in Explanation::nodes
  std::string why;          // why it got a buffer ("" when it did not)
  std::vector<int> groups;  // the kernel groups computing it (an elementwise node can be inlined into several)
};

// The kernels cut for one realized node, in schedule order (a WRITE's copy
// and stores are two).
struct ExplainedGroup {
  int node = 0;
  std::vector<std::string> kernels;
};

// A scheduler pass that makes or changes kernels, with their names after it.
struct ExplainedPass {
  std::string pass;
  std::vector<std::string> kernels;
};

struct Explanation {
  std::vector<ExplainedNode> nodes;  // topological order; the last is the SINK of the outputs
  std::vector<ExplainedGroup> groups;
  std::vector<ExplainedPass> passes;
};

// Reasons by node, as find_realize_points records them.
using Reasons = uop::NodeMap<const char *>;

void set_explaining(bool on);  // process-wide; off by default
bool explaining();

// `order`: the scheduled graph in topological order; `why`: each realized
// node's reason; `kernels`: per realized node (in order), its kernels' names.
std::shared_ptr<Explanation> explain(const std::vector<uop::UOpRef> &order, const Reasons &why,
                                     const std::vector<std::vector<std::string>> &kernels);

}  // namespace loom::schedule
