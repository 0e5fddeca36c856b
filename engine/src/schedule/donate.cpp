#include "schedule/donate.h"

#include <algorithm>
#include <array>
#include <memory_resource>

#include "uop/graph.h"

namespace loom::schedule {

using uop::NodeMap;
using uop::NodeSet;
using uop::Op;
using uop::UOp;

bool always_realized(const UOp *u) {
  return u->op == Op::Contiguous || u->op == Op::Write || u->op == Op::Scan || u->op == Op::Sort;
}

bool is_full_overwrite(const UOp *w) {
  const auto &a = w->arg_as<uop::WriteArg>();
  return w->src.size() == 2 && !a.acc && a.view.contiguous() &&
         shape::prod(a.view.shape()) == shape::prod(uop::shape_of(w->src[0])) &&
         uop::shape_of(w->src[1]) == a.view.shape();
}

namespace {

using Nodes = std::pmr::vector<const UOp *>;

long strong_refs(const UOp *u) { return u->weak_from_this().use_count(); }

// The graphs' nodes and the references between them.
struct Graphs {
  NodeSet runs;              // nodes of the graphs that run (the substituted ones)
  NodeMap<long> in_outputs;  // references to each node from them
  NodeSet seen;
  NodeMap<long> in_raw_or_outputs;  // from nodes of the raw graphs and the ones that run
  const NodeMap<long> *in_graph = &in_outputs;  // the same counts when substitution changed nothing
};

// Walks the graphs of `roots`: `seen` gets their nodes, `refs` the references
// to each node from them, `writes` (cleared first) their WRITEs.
void walk_graphs(std::initializer_list<const std::vector<UOpRef> *> roots, NodeSet &seen, NodeMap<long> &refs,
                 Nodes &writes, Nodes &stack) {
  writes.clear();
  for (const auto *graphs : roots)
    for (auto &g : *graphs)
      if (seen.insert(g.get())) stack.push_back(g.get());
  while (!stack.empty()) {
    const UOp *u = stack.back();
    stack.pop_back();
    if (u->op == Op::Write) writes.push_back(u);
    for (auto &s : u->src) {
      refs[s.get()]++;
      if (seen.insert(s.get())) stack.push_back(s.get());
    }
  }
}

// Which of up to 64 bases a node reads, at any depth: bit k when some path
// from it leads down to base k or a view of base k. The walks of one base's
// check visit only nodes with its bit (any other node can neither read the
// old value nor refer to the base), so the graph below the writes is walked
// once per 64 bases, not once per base. Memoized.
class Reach {
 public:
  void reset(const std::vector<const UOp *> &bases) {
    bit_of_ = {};
    memo_ = {};
    for (size_t k = 0; k < bases.size(); k++) *bit_of_.insert(bases[k]).first = uint64_t{1} << k;
  }
  // The bit of the base that `u` is, or is a view of.
  uint64_t own(const UOp *u) const {
    if (const uint64_t *b = bit_of_.find(u)) return *b;
    if (u->op == Op::View)
      if (const uint64_t *b = bit_of_.find(u->src[0].get())) return *b;
    return 0;
  }
  uint64_t below(const UOp *root) {
    if (const uint64_t *m = memo_.find(root)) return *m;
    std::vector<std::pair<const UOp *, bool>> &walk = walk_;  // empty between calls; kept for its capacity
    walk.push_back({root, false});
    while (!walk.empty()) {
      auto [u, expanded] = walk.back();
      walk.pop_back();
      if (!expanded) {
        if (memo_.contains(u)) continue;
        walk.push_back({u, true});
        for (auto &s : u->src)
          if (!memo_.contains(s.get())) walk.push_back({s.get(), false});
        continue;
      }
      uint64_t bits = 0;
      for (auto &s : u->src) bits |= *memo_.find(s.get()) | own(s.get());
      memo_[u] = bits;
    }
    return *memo_.find(root);
  }

 private:
  NodeMap<uint64_t> bit_of_, memo_;
  std::vector<std::pair<const UOp *, bool>> walk_;
};

// The nodes below the writes `ws` that can read `base` (`bit` is the base's
// in `reach`): those of the writes' kernel, as far as it can read the base (a
// node with no path down to the base cannot read the old value or refer to
// the base, and neither can any node below it), and those of the kernels
// that run before it (below a node that always gets its own buffer).
struct Readers {
  NodeSet in_same_kernel, in_earlier;
  Nodes same_kernel, earlier;
  explicit Readers(std::pmr::memory_resource *scratch) : same_kernel(scratch), earlier(scratch) {}
};

void find_readers(Readers &r, const UOp *base, const Nodes &ws, Reach &reach, uint64_t bit,
                  std::pmr::memory_resource *scratch) {
  Nodes todo(scratch), below(scratch);
  for (const UOp *w : ws) {
    todo.push_back(w->src[1].get());
    if (w->src.size() > 2) todo.push_back(w->src[2].get());
  }
  while (!todo.empty()) {
    const UOp *u = todo.back();
    todo.pop_back();
    if (u == base || !(reach.below(u) & bit) || !r.in_same_kernel.insert(u)) continue;
    r.same_kernel.push_back(u);
    if (always_realized(u)) {
      below.push_back(u);
      continue;
    }
    for (auto &x : u->src) todo.push_back(x.get());
  }
  while (!below.empty()) {  // kernels before it, where they read the base
    const UOp *u = below.back();
    below.pop_back();
    if (u == base || !(reach.below(u) & bit) || !r.in_earlier.insert(u)) continue;
    r.earlier.push_back(u);
    for (auto &x : u->src) below.push_back(x.get());
  }
}

bool views_of(const UOp *u, const UOp *base) { return u == base || (u->op == Op::View && u->src[0].get() == base); }

// Whether every reference to the base (or a view of it) is one the writes may
// have: the writes' own; a read in the write's kernel that is elementwise at
// the written position (a whole overwrite reading the base or a row-major
// view of it); or a read in a kernel that runs before the write's.
bool references_allowed(const UOp *base, const Nodes &ws, const Readers &r) {
  NodeMap<long> allowed;
  allowed[base] = static_cast<long>(ws.size());
  const bool elementwise_ok = std::all_of(ws.begin(), ws.end(), [](const UOp *w) { return is_full_overwrite(w); });
  for (const UOp *u : r.same_kernel) {
    if (always_realized(u)) continue;
    const bool identity_view = u->op == Op::View && u->arg_as<shape::ShapeTracker>().contiguous();
    if (elementwise_ok && (uop::is_alu(u->op) || u->op == Op::Cast || identity_view))
      for (auto &x : u->src)
        if (x.get() == base || (views_of(x.get(), base) && x->arg_as<shape::ShapeTracker>().contiguous()))
          allowed[x.get()]++;
  }
  for (const UOp *u : r.earlier)
    if (!r.in_same_kernel.contains(u) || always_realized(u))
      for (auto &x : u->src)
        if (views_of(x.get(), base)) allowed[x.get()]++;
  bool ok = true;
  allowed.for_each([&](const void *node, long n) { ok &= strong_refs(static_cast<const UOp *>(node)) == n; });
  return ok;
}

// A node of the write's kernel, or of a kernel before it, that reads the
// old value (directly, or through nodes without a buffer of their own)
// must be read by these graphs only: one held elsewhere (a tensor still
// to be read) would be computed later, from the overwritten buffer. Within
// the graphs that run, only the write's kernel and kernels before it may
// read it: another kernel fusing it (`a + b` read by the write into b and
// by another output) may run after the stores. (A node that reads the old
// value has the base's bit, and so do the nodes referring to it: `earlier`
// holds every one of them below the writes.)
bool old_value_read_only_before(const UOp *base, const Nodes &ws, const Graphs &g, const Readers &r,
                                std::pmr::memory_resource *scratch) {
  // Each node counts once: a node can be in both lists (a WRITE the write
  // depends on ends its kernel and begins the walk of the kernels before it;
  // a node fused into the write's kernel may also be computed in an earlier one).
  NodeMap<long> from_before;  // references from the writes, their kernel and the kernels before it
  NodeSet counted;
  for (const Nodes *nodes : std::initializer_list<const Nodes *>{&ws, &r.same_kernel, &r.earlier})
    for (const UOp *u : *nodes)
      if (g.runs.contains(u) && counted.insert(u))
        for (auto &x : u->src) from_before[x.get()]++;
  NodeMap<char> reads_old;  // 1: reads the base's old value, directly or below
  std::pmr::vector<std::pair<const UOp *, bool>> walk(scratch);
  for (const UOp *w : ws) walk.push_back({w->src[1].get(), false});
  for (const UOp *u : r.earlier) walk.push_back({u, false});
  bool ok = true;
  while (ok && !walk.empty()) {
    auto [u, expanded] = walk.back();
    walk.pop_back();
    if (reads_old.contains(u) && !expanded) continue;
    if (views_of(u, base) || (!r.in_same_kernel.contains(u) && !r.in_earlier.contains(u)) || always_realized(u)) {
      reads_old[u] = views_of(u, base);
      continue;
    }
    if (!expanded) {
      walk.push_back({u, true});
      for (auto &x : u->src)
        if (!reads_old.contains(x.get())) walk.push_back({x.get(), false});
      continue;
    }
    char rd = 0;
    for (auto &x : u->src) rd |= *reads_old.find(x.get());
    reads_old[u] = rd;
    if (const long *n = g.in_graph->find(u); rd && n) ok &= strong_refs(u) == *n;
    if (const long *n = g.in_outputs.find(u); rd && n) ok &= *n == from_before[u];
  }
  return ok;
}

// Whether the writes `ws` over `base` may store into its buffer: every
// reference to the base is one they may have (references_allowed), and no
// value read from the old contents is read after the stores
// (old_value_read_only_before). `bit` is the base's in `reach`.
bool donatable(const UOp *base, const Nodes &ws, const Graphs &g, Reach &reach, uint64_t bit,
               std::pmr::memory_resource *scratch) {
  Readers r(scratch);
  find_readers(r, base, ws, reach, bit, scratch);
  return references_allowed(base, ws, r) && old_value_read_only_before(base, ws, g, r, scratch);
}

}  // namespace

// Counting strong references: substitution may have rebuilt a write, so its
// raw copy (held by the tensor until realize returns) counts as the same
// write. Raw pointers only: the count sees no reference of its own.
NodeMap<std::shared_ptr<uop::Buffer>> find_donations(const std::vector<UOpRef> &raw,
                                                     const std::vector<UOpRef> &outputs, size_t graph_size) {
  // The walks' lists live on the stack while a small graph's fit.
  std::array<std::byte, 4096> arena;
  std::pmr::monotonic_buffer_resource scratch(arena.data(), arena.size());
  Nodes writes(&scratch), stack(&scratch);
  Graphs g;
  g.runs.reserve(graph_size);
  g.in_outputs.reserve(graph_size);
  walk_graphs({&outputs}, g.runs, g.in_outputs, writes, stack);
  if (writes.empty()) return {};
  if (raw != outputs) {
    g.seen.reserve(graph_size);
    g.in_raw_or_outputs.reserve(graph_size);
    walk_graphs({&raw, &outputs}, g.seen, g.in_raw_or_outputs, writes, stack);
    g.in_graph = &g.in_raw_or_outputs;
  }
  // The writes over each base, bases in first-seen order.
  std::pmr::vector<std::pair<const UOp *, Nodes>> writes_of(&scratch);
  NodeMap<size_t> base_index;
  for (const UOp *w : writes) {
    auto [i, fresh] = base_index.insert(w->src[0].get());
    if (fresh) {
      *i = writes_of.size();
      writes_of.emplace_back(w->src[0].get(), Nodes(&scratch));
    }
    writes_of[*i].second.push_back(w);
  }
  NodeMap<std::shared_ptr<uop::Buffer>> out;
  Reach reach;
  for (size_t first = 0; first < writes_of.size(); first += 64) {
    std::vector<const UOp *> bases;
    for (size_t k = first; k < std::min(first + 64, writes_of.size()); k++) bases.push_back(writes_of[k].first);
    reach.reset(bases);
    for (size_t k = first; k < first + bases.size(); k++) {
      const auto &[base, ws] = writes_of[k];
      const UOp *buf = uop::whole_buffer(base);
      if (!buf || (buf != base && base->src[0].use_count() != 1)) continue;
      // The graphs that run hold one write over this base (the raw graphs
      // may hold its unsubstituted copy): two different updates of one value
      // (two tensors that took one buffer's value, each written since) each
      // need the old value.
      if (std::count_if(ws.begin(), ws.end(), [&](const UOp *w) { return g.runs.contains(w); }) > 1) continue;
      // Nothing but the writes refers to the base (and nothing but the base
      // to its buffer): no one can read the old value. Otherwise the check.
      const bool alone = strong_refs(base) == static_cast<long>(ws.size()) && (buf == base || base->src[0].use_count() == 1);
      if (alone || donatable(base, ws, g, reach, uint64_t{1} << (k - first), &scratch))
        for (const UOp *w : ws) out[w] = donated_buffer(w);
    }
  }
  return out;
}

const std::shared_ptr<uop::Buffer> &donated_buffer(const UOp *write) {
  return uop::whole_buffer(write->src[0].get())->arg_as<uop::BufferArg>().buffer;
}

}  // namespace loom::schedule
