#include "schedule/explain.h"

#include <atomic>

#include "loom/dtype.h"
#include "uop/graph.h"

namespace loom::schedule {

namespace {
std::atomic<bool> g_explaining{false};

std::string short_arg(const uop::UOp &u) {
  std::string a = uop::arg_str(u.arg);
  if (a.size() > 96) a = a.substr(0, 93) + "...";
  return a;
}
}  // namespace

void set_explaining(bool on) { g_explaining = on; }
bool explaining() { return g_explaining.load(std::memory_order_relaxed); }

std::shared_ptr<Explanation> explain(const std::vector<uop::UOpRef> &order, const Reasons &why,
                                     const std::vector<std::vector<std::string>> &kernels) {
  auto e = std::make_shared<Explanation>();
  uop::NodeMap<int> at;
  for (size_t i = 0; i < order.size(); i++) at[order[i].get()] = static_cast<int>(i);
  for (const uop::UOpRef &u : order) {
    ExplainedNode n{uop::op_name(u->op), dtype_name(u->dtype), short_arg(*u), {}, {}, "", {}};
    if (u->op != uop::Op::Sink) n.shape = uop::shape_of(u);
    for (auto &s : u->src) n.src.push_back(*at.find(s.get()));
    if (const char *const *r = why.find(u.get())) n.why = *r;
    e->nodes.push_back(std::move(n));
  }
  // A group is its realized node and what it inlines: the sources down to
  // other realized nodes and leaves.
  for (size_t i = 0; i < order.size(); i++) {
    if (!why.contains(order[i].get())) continue;
    const int g = static_cast<int>(e->groups.size());
    e->groups.push_back({static_cast<int>(i), g < static_cast<int>(kernels.size()) ? kernels[static_cast<size_t>(g)]
                                                                                  : std::vector<std::string>{}});
    std::vector<int> stack{static_cast<int>(i)};
    while (!stack.empty()) {
      const int k = stack.back();
      stack.pop_back();
      ExplainedNode &n = e->nodes[static_cast<size_t>(k)];
      if (!n.groups.empty() && n.groups.back() == g) continue;
      n.groups.push_back(g);
      for (int s : n.src) {
        const uop::UOp *su = order[static_cast<size_t>(s)].get();
        if (!why.contains(su) && su->op != uop::Op::Buffer) stack.push_back(s);
      }
    }
  }
  return e;
}

}  // namespace loom::schedule
