#include "codegen/launch.h"

#include "codegen/affine.h"
#include "codegen/linearize.h"
#include "loom/error.h"

namespace loom::codegen {

using uop::Op;

namespace {

// The index in `uops` of the ENDRANGE closing the RANGE at `open`.
size_t end_of(const std::vector<UOpRef> &uops, size_t open) {
  for (size_t i = open + 1; i < uops.size(); i++)
    if (uops[i]->op == Op::EndRange && uops[i]->src[0] == uops[open]) return i;
  LOOM_CHECK(false, "a loop without its end");
  return 0;
}

// Whether the reductions in [body, end) read each output's terms
// consecutively (a row sum): one thread per output would read rows far
// apart, a block per output reads a row's consecutive elements together.
// Every load moves by 0 or 1 element a step of the nest's innermost loop,
// and some load by 1.
bool reads_rows(const std::vector<UOpRef> &u, size_t body, size_t end) {
  const uop::UOp *inner = nullptr;
  for (size_t i = body; i < end; i++)
    if (u[i]->op == Op::Range) inner = u[i].get();
  bool any = false;
  for (size_t i = body; inner && i < end; i++) {
    if (u[i]->op != Op::Load) continue;
    const Affine a = affine(u[i]->src[1]);
    const auto it = a.terms.find(inner);
    const int64_t step = it == a.terms.end() ? 0 : it->second;
    if (step != 0 && step != 1) return false;
    any = any || step == 1;
  }
  return any;
}

// A scan's per-thread statements, [body, end): values, its accumulators,
// then the scanned loop holding everything else. Grouped when that loop has
// at least 4 elements for each of a block's threads.
Launch plan_scan(Launch l, const std::vector<UOpRef> &u, size_t body, size_t end) {
  size_t open = body;
  while (open < end && u[open]->op != Op::Range) {
    if (uop::is_store(u[open]->op)) return l;
    open++;
  }
  if (open == end || end_of(u, open) + 1 != end || trip(u[open]) < 4 * l.block_threads) return l;
  bool scanned = false;
  for (size_t i = open + 1; i < end; i++) scanned |= u[i]->op == Op::Scan && u[i]->src[1] == u[open];
  if (!scanned) return l;
  l.grouped = true;
  l.scan = u[open].get();
  return l;
}

}  // namespace

Launch plan_launch(const KernelSpec &p, const Target &t) {
  Launch l;
  l.block_threads = t.block_threads;
  if (t.block_threads == 0 || p.library) return l;  // a library kernel launches as its template says
  const auto &u = p.uops;
  std::set<const uop::UOp *> reduced;  // loops some reduction or scan folds over
  bool scans = false;
  for (const UOpRef &x : u) {
    if (x->op == Op::Reduce)
      for (size_t i = 1; i < x->src.size(); i++) reduced.insert(x->src[i].get());
    scans |= x->op == Op::Scan;
  }
  size_t body = 0, end = u.size();  // the per-thread statements: [body, end)
  size_t open = 0;
  if (p.global_range) {
    while (open < u.size() && u[open] != p.global_range) open++;
    LOOM_CHECK(open < u.size(), "the global loop is not in the program");
  }
  // Threads split the global loop when it is the whole program but values
  // (anything else outside it would run once per thread).
  bool whole = p.global_range && end_of(u, open) + 1 == u.size();
  for (size_t i = 0; whole && i < open; i++)
    whole = !uop::is_store(u[i]->op) && u[i]->op != Op::DefineAcc && u[i]->op != Op::Range;
  if (whole) {
    for (;;) {
      l.threads.push_back(u[open]);
      l.collapsed.insert(u[open].get());
      l.outputs *= trip(u[open]);
      const size_t close = end_of(u, open);
      body = open + 1, end = close;
      size_t next = body;  // values only before an inner output loop that ends where this one does
      while (next < close && u[next]->op != Op::Range && !uop::is_store(u[next]->op) && u[next]->op != Op::DefineAcc)
        next++;
      if (next == close || u[next]->op != Op::Range || reduced.count(u[next].get()) || scans) break;
      if (end_of(u, next) + 1 != close) break;
      open = next;
    }
  }
  if (scans) return plan_scan(l, u, body, end);
  if (l.outputs > t.group_max_outputs && !reads_rows(u, body, end)) return l;
  std::vector<size_t> loops;
  int depth = 0;
  for (size_t i = body; i < end; i++) {
    if (u[i]->op == Op::Range && depth++ == 0) loops.push_back(i);
    if (u[i]->op == Op::EndRange) depth--;
    if (uop::is_store(u[i]->op) && depth > 0) return l;  // a store inside a per-thread loop
  }
  if (loops.empty()) return l;
  for (size_t i : loops) {  // the loop nest's length: a float sum's two levels count as one
    int64_t length = 1;
    for (size_t j = i, close = end_of(u, i); j < close; j++)
      if (u[j]->op == Op::Range) length *= trip(u[j]);
    if (!reduced.count(u[i].get()) || length < t.group_min_length) return l;
  }
  for (const UOpRef &x : u)  // the accumulators' registers must shuffle
    if (x->op == Op::DefineAcc) {
      const DType d = x->src[0]->dtype;
      if (d == DType::Bool || d == DType::UInt8 || d == DType::Int8 || d == DType::Int16) return l;
    }
  l.grouped = true;
  for (size_t i : loops) {
    l.strided.insert(u[i].get());
    // Loops nested alone inside it, each the whole body of the one around it,
    // run as one: consecutive threads take consecutive innermost terms.
    std::vector<UOpRef> &inner = l.flattened[u[i].get()];
    for (size_t at = i, close = end_of(u, i); u[at + 1]->op == Op::Range && reduced.count(u[at + 1].get());) {
      const size_t next_close = end_of(u, at + 1);
      if (next_close + 1 != close) break;
      inner.push_back(u[at + 1]);
      l.inner_flat.insert(u[at + 1].get());
      at++, close = next_close;
    }
    if (inner.empty()) l.flattened.erase(u[i].get());
  }
  return l;
}

}  // namespace loom::codegen
