#include "codegen/linearize.h"

#include <algorithm>
#include <functional>
#include <set>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "loom/error.h"
#include "codegen/mul_add.h"
#include "codegen/vectorize.h"
#include "uop/graph.h"

namespace loom::codegen {

using uop::Op;
using uop::UOp;

namespace {

class Linearizer {
 public:
  explicit Linearizer(KernelSpec &p) : p_(p) {}

  void run(const LoweredKernel &k) {
    for (auto &store : k.sink->src) mark_values(store->src[2]);
    if (k.tail_sink)
      for (auto &store : k.tail_sink->src) mark_values(store->src[2]);
    for (auto &u : uop::toposort(k.sink))
      if (u->op == Op::Reduce) reduces_.push_back(u);
    const UOpRef &scan = k.sink->src[0]->src[2];  // a scan kernel has one store
    const bool scanning = scan->op == Op::Scan;
    const size_t shared = k.tail_sink ? k.tail_depth : k.out_ranges.size();
    // Each value is computed in the outermost output loop that determines it
    // (loop-invariant code motion: a window's gradient computes its pooled
    // element's value once, not once per window position). Not in a serial
    // kernel: an accumulating write loads what an earlier iteration stored.
    auto open_output = [&](size_t i) {
      open_range(k.out_ranges[i]);
      if (!scanning && !k.serial && i + 1 < k.out_ranges.size()) hoist(k.sink);
    };
    for (size_t i = 0; i < shared && i + scanning < k.out_ranges.size(); i++) open_output(i);
    const std::unordered_set<const UOp *> outer_done = done_;
    for (size_t i = shared; i < k.out_ranges.size(); i++) open_output(i);
    if (scanning) {  // the accumulator lives outside the scanned (innermost) loop
      push(UOp::make(Op::DefineAcc, scan->dtype, {scan}));
      open_range(k.out_ranges.back());
      emit(scan->src[0]);
      push(scan);
      p_.work += depth_iters_;
      done_.insert(scan.get());
    }
    // An unrolled group computes every element, then stores them in element
    // order. Values never read the output at another element's address.
    for (auto &store : k.sink->src)
      for (size_t i = 1; i < store->src.size(); i++) emit(store->src[i]);
    for (auto &store : k.sink->src) push(store);
    for (size_t i = k.out_ranges.size(); i-- > shared;) close_range();
    if (k.tail_sink) {  // the tail's values are its own: nothing from the groups' loop is in scope
      done_ = outer_done;
      for (auto &store : k.tail_sink->src)
        for (size_t i = 1; i < store->src.size(); i++) emit(store->src[i]);
      for (auto &store : k.tail_sink->src) push(store);
    }
    for (size_t i = shared; i-- > 0;) close_range();
  }

 private:
  void push(const UOpRef &u) { p_.uops.push_back(u); }

  // Emits every value of the stores that the open loops determine.
  void hoist(const UOpRef &sink) {
    for (auto &n : uop::toposort(sink)) {
      if (uop::is_store(n->op) || n->op == Op::Sink || uop::is_kernel_leaf(n->op) ||
          n->op == Op::Range || done_.count(n.get()))
        continue;
      if (ready(n)) emit(n);
    }
  }

  // Nodes that compute values (not addresses): reachable from the stored
  // value without passing through a load's index or gate.
  void mark_values(const UOpRef &u) {
    if (!values_.insert(u.get()).second || u->op == Op::Load) return;
    for (auto &s : u->src) mark_values(s);
  }

  const std::set<int64_t> &ranges_of(const UOpRef &u) {
    if (auto it = deps_.find(u.get()); it != deps_.end()) return it->second;
    std::set<int64_t> r;
    if (u->op == Op::Range) r.insert(u->arg_as<int64_t>());
    for (auto &s : u->src) {
      auto &sr = ranges_of(s);
      r.insert(sr.begin(), sr.end());
    }
    if (u->op == Op::Reduce)
      for (size_t i = 1; i < u->src.size(); i++) r.erase(u->src[i]->arg_as<int64_t>());
    keep_.push_back(u);
    return deps_[u.get()] = r;
  }

  bool ready(const UOpRef &u) {
    for (auto r : ranges_of(u))
      if (!open_set_.count(r)) return false;
    return true;
  }

  void open_range(const UOpRef &r) {
    push(r);
    open_.push_back(r);
    open_set_.insert(r->arg_as<int64_t>());
    depth_iters_ *= static_cast<int64_t>(r->src[0]->const_value());
    p_.iterations = std::max(p_.iterations, depth_iters_);
  }

  void close_range() {
    const UOpRef r = open_.back();
    open_.pop_back();
    open_set_.erase(r->arg_as<int64_t>());
    depth_iters_ /= static_cast<int64_t>(r->src[0]->const_value());
    push(UOp::make(Op::EndRange, DType::Bool, {r}));
  }

  void emit(const UOpRef &u) {
    if (uop::is_kernel_leaf(u->op) || u->op == Op::Range || done_.count(u.get())) return;
    if (u->op == Op::Reduce) return emit_reduce(u);
    for (auto &s : u->src) emit(s);
    LOOM_CHECK(ready(u), "value scheduled outside its loops");
    done_.insert(u.get());
    keep_.push_back(u);
    if (uop::is_alu(u->op)) p_.alu_ops++;
    if (uop::is_alu(u->op) && values_.count(u.get())) p_.work += depth_iters_ * lanes(*u);
    push(u);
  }

  // A reduction's loop nest, shared by every other reduction over the same
  // loop variables whose other loops are open (an upcast group: one
  // accumulator per element).
  void emit_reduce(const UOpRef &red) {
    const std::vector<UOpRef> loops(red->src.begin() + 1, red->src.end());
    std::vector<UOpRef> group;
    for (const UOpRef &r : reduces_)
      if (!done_.count(r.get()) && std::equal(r->src.begin() + 1, r->src.end(), loops.begin(), loops.end()) &&
          ready(r))
        group.push_back(r);
    if (std::find(group.begin(), group.end(), red) == group.end()) group.insert(group.begin(), red);
    std::set<int64_t> own;
    for (const UOpRef &r : loops) own.insert(r->arg_as<int64_t>());
    // Hoist everything the loop body needs that does not depend on this reduction's loops.
    for (const UOpRef &g : group)
      for (auto &n : uop::toposort(g->src[0])) {
        if (uop::is_kernel_leaf(n->op) || n->op == Op::Range || done_.count(n.get())) continue;
        auto &deps = ranges_of(n);
        bool inner = std::any_of(deps.begin(), deps.end(), [&](int64_t r) { return own.count(r) > 0; });
        if (!inner && ready(n)) emit(n);
      }
    for (const UOpRef &g : group) push(UOp::make(Op::DefineAcc, g->dtype, {g}));
    for (const UOpRef &r : loops) open_range(r);
    const size_t body = p_.uops.size();
    for (const UOpRef &g : group) {
      const std::vector<UOpRef> operands = fold_operands(g);  // a MULADD fold's MUL is its own step
      for (const UOpRef &v : operands) emit(v);
      push(g);
      p_.work += depth_iters_ * lanes(*g) * static_cast<int64_t>(operands.size());
    }
    for (size_t i = 0; i < loops.size(); i++) close_range();
    // What the body computed from its loop variables is out of scope now: a
    // later nest over the same variables (a reduction hoisted apart from its
    // group) computes it again.
    for (size_t i = body; i < p_.uops.size(); i++) {
      const UOpRef &u = p_.uops[i];
      if (u->op == Op::Range || u->op == Op::EndRange || u->op == Op::DefineAcc) continue;
      const auto &deps = ranges_of(u);
      if (std::any_of(deps.begin(), deps.end(), [&](int64_t r) { return own.count(r) > 0; })) done_.erase(u.get());
    }
    for (const UOpRef &g : group) {
      done_.insert(g.get());
      keep_.push_back(g);
    }
  }

  KernelSpec &p_;
  std::vector<UOpRef> open_;
  std::set<int64_t> open_set_;
  std::unordered_set<const UOp *> done_, values_;
  std::unordered_map<const UOp *, std::set<int64_t>> deps_;
  std::vector<UOpRef> keep_;
  std::vector<UOpRef> reduces_;  // the kernel's reductions, sources first
  int64_t depth_iters_ = 1;
};

}  // namespace

KernelSpec linearize(const LoweredKernel &k, const std::string &name, std::vector<DType> buf_dtypes) {
  KernelSpec p;
  p.name = name;
  p.buf_dtypes = std::move(buf_dtypes);
  if (!k.out_ranges.empty() && !k.serial) p.global_range = k.out_ranges[0];
  Linearizer(p).run(k);
  return p;
}

std::string program_str(const KernelSpec &p) {
  std::ostringstream os;
  int depth = 0;
  for (auto &u : p.uops) {
    if (u->op == Op::EndRange) depth--;
    os << std::string(2 * depth + 2, ' ') << uop::op_name(u->op) << " " << dtype_name(u->dtype);
    const UOpRef &shown = u->op == Op::EndRange || u->op == Op::DefineAcc ? u->src[0] : u;
    auto a = uop::arg_str(shown->arg);
    if (!a.empty() && !uop::is_store(u->op)) os << " " << a;
    os << "\n";
    if (u->op == Op::Range) depth++;
  }
  return os.str();
}

}  // namespace loom::codegen
