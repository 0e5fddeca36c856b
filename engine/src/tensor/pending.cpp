#include "tensor/pending.h"

#include <mutex>
#include <utility>

#include "engine/realize.h"
#include "tensor/graph.h"
#include "tensor/impl.h"

namespace loom::tensor {

namespace {

struct Pending {
  std::mutex mu;
  std::vector<std::weak_ptr<TensorImpl>> targets;
};
Pending &pending() {
  static auto *p = new Pending();
  return *p;
}

bool computed(const UOpRef &u) {
  const Op root = root_of(u)->op;
  return root == Op::Buffer || root == Op::Const;
}

thread_local UpdateObserver *g_observer = nullptr;

}  // namespace

UpdateObserver *set_update_observer(UpdateObserver *observer) { return std::exchange(g_observer, observer); }

void note_update(const std::shared_ptr<TensorImpl> &target, const UOpRef &before) {
  if (g_observer) (*g_observer)(target, before);
  if (computed(target->uop)) return;
  auto &p = pending();
  std::lock_guard<std::mutex> l(p.mu);
  // Same owner, compared without locking each weak reference.
  for (auto &w : p.targets)
    if (!w.owner_before(target) && !target.owner_before(w)) return;
  p.targets.push_back(target);
}

namespace {
// The live targets of pending updates not computed since; `take` empties the list.
std::vector<std::shared_ptr<TensorImpl>> pending_targets(bool take) {
  std::vector<std::shared_ptr<TensorImpl>> targets;
  auto &p = pending();
  std::lock_guard<std::mutex> l(p.mu);
  targets.reserve(p.targets.size());
  for (auto &w : p.targets)
    if (auto t = w.lock(); t && !computed(t->uop)) targets.push_back(std::move(t));
  if (take) p.targets.clear();
  return targets;
}
}  // namespace

std::vector<UOpRef> with_pending_updates(const std::vector<UOpRef> &outs) {
  std::vector<UOpRef> all = outs;
  for (auto &t : pending_targets(false)) all.push_back(t->uop);
  return all;
}

std::vector<UOpRef> realize_with_updates(const std::vector<UOpRef> &outs) {
  const std::vector<std::shared_ptr<TensorImpl>> targets = pending_targets(true);
  if (outs.empty() && targets.empty()) return {};
  std::vector<UOpRef> all;
  all.reserve(outs.size() + targets.size());
  all.insert(all.end(), outs.begin(), outs.end());
  for (auto &t : targets) all.push_back(t->uop);
  std::vector<UOpRef> done = engine::realize(all);
  for (size_t i = 0; i < targets.size(); i++) {
    const UOpRef before = targets[i]->uop;
    targets[i]->uop = done[outs.size() + i];
    rebase_views(*targets[i], before, targets[i]->uop);
  }
  done.resize(outs.size());
  return done;
}

void rebase_views(TensorImpl &impl, const UOpRef &before, const UOpRef &now) {
  if (before == now) return;
  // A view holding its base's value as it is (detach()) shares it: the base
  // takes the buffer too, so that it stops holding the graph (a detached
  // loss would otherwise keep the whole forward, and every parameter's old
  // value, alive through the optimizer's step).
  if (impl.view_base && impl.view_base->uop == before) {
    impl.view_base->uop = now;
    rebase_views(*impl.view_base, before, now);
  }
  for (auto &w : impl.views) {
    auto v = w.lock();
    if (!v) continue;
    if (v->uop == before)
      v->uop = now;
    else if (v->uop->op == Op::View && v->uop->src[0] == before)
      v->uop = view(now, v->uop->arg_as<shape::ShapeTracker>().compose_onto(tracker_of(now)));
  }
}

}  // namespace loom::tensor
