#include "schedule/lifetime.h"

#include <algorithm>

#include "schedule/schedule.h"
#include "uop/graph.h"

namespace loom::schedule {

using uop::NodeMap;
using uop::NodeSet;
using uop::UOp;
using uop::UOpRef;

namespace {

const std::shared_ptr<uop::Buffer> &buffer_of(const UOpRef &bv) {
  return uop::root_of(bv)->arg_as<uop::BufferArg>().buffer;
}

}  // namespace

Kept find_kept(const UOpRef &raw_sink, const UOpRef &sink, const NodeMap<std::shared_ptr<uop::Buffer>> &donated,
               const Schedule &sched, size_t graph_size) {
  // Outputs keep their buffers, and so do writes into an existing buffer.
  NodeSet kept_nodes;
  for (const UOpRef *s : {&raw_sink, &sink})
    for (auto &o : (*s)->src) kept_nodes.insert(uop::base_of(o).get());
  bool any = false;
  for (auto &[node, bv] : sched.realizes) any |= !kept_nodes.contains(node.get()) && !donated.contains(node.get());
  if (!any) return Kept(sched.realizes.size(), true);  // the common small realize: nothing but outputs got a buffer

  // References to each node from the two graphs' nodes and from the
  // schedule's entries. A node with one strong reference has one parent in
  // the graphs (that reference) and no holder outside: the walk reaches it
  // once and counts nothing for it. The others go in `shared`.
  NodeMap<long> refs;
  NodeSet seen, has_buffer;
  refs.reserve(graph_size);
  seen.reserve(graph_size);
  for (auto &[node, bv] : sched.realizes) {
    refs[node.get()]++;
    refs[bv.get()]++;
    has_buffer.insert(node.get());
  }
  std::vector<const UOp *> shared, stack;
  for (const UOpRef *s : {&raw_sink, &sink})
    if (seen.insert(s->get())) stack.push_back(s->get());
  while (!stack.empty()) {
    const UOp *u = stack.back();
    stack.pop_back();
    for (auto &s : u->src) {
      if (s.use_count() == 1) {
        stack.push_back(s.get());
        continue;
      }
      refs[s.get()]++;
      if (seen.insert(s.get())) {
        stack.push_back(s.get());
        shared.push_back(s.get());
      }
    }
  }

  // A node with more strong references than those is held outside (a tensor,
  // a saved value, a graph not realized now). It, or the realized nodes it
  // reads through nodes without a buffer, may be asked for again.
  NodeSet visited;
  for (const UOp *u : shared) {
    if (u == raw_sink.get() || u == sink.get() || u->weak_from_this().use_count() <= *refs.find(u)) continue;
    stack.push_back(u);
    while (!stack.empty()) {
      const UOp *x = stack.back();
      stack.pop_back();
      if (!visited.insert(x)) continue;
      if (has_buffer.contains(x)) {
        kept_nodes.insert(x);
        continue;
      }
      for (auto &s : x->src) stack.push_back(s.get());
    }
  }

  NodeSet kept_buffers;
  for (auto &[node, bv] : sched.realizes)
    if (kept_nodes.contains(node.get()) || donated.contains(node.get())) kept_buffers.insert(buffer_of(bv).get());
  Kept kept;
  kept.reserve(sched.realizes.size());
  for (auto &entry : sched.realizes) kept.push_back(kept_buffers.contains(buffer_of(entry.second).get()));
  return kept;
}

void drop_transient(Schedule &sched, const Kept &kept) {
  if (std::find(kept.begin(), kept.end(), false) == kept.end()) return;
  NodeSet transient;
  std::vector<std::pair<UOpRef, UOpRef>> realizes;
  for (size_t i = 0; i < sched.realizes.size(); i++) {
    const std::shared_ptr<uop::Buffer> &b = buffer_of(sched.realizes[i].second);
    if (kept[i]) realizes.push_back(std::move(sched.realizes[i]));
    else if (transient.insert(b.get())) sched.transient.push_back(b);
  }
  sched.realizes = std::move(realizes);
}

}  // namespace loom::schedule
