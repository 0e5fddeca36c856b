#include "jit/replay_graph.h"

#include <algorithm>
#include <map>

#include "engine/realize.h"
#include "loom/error.h"
#include "runtime/device.h"

namespace loom::jit {

namespace {
std::string describe(const ReplayGraph::Slot &s) {
  return "buffer " + std::to_string(s.buffer_id) + " (" + dtype_name(s.dtype) + ", " + std::to_string(s.size) +
         " elements)";
}
}  // namespace

ReplayGraph::ReplayGraph(engine::Capture &&capture, const Classify &kind_of) : steps_(std::move(capture.steps)) {
  const std::vector<std::shared_ptr<uop::Buffer>> captured = index_slots();
  std::vector<long> refs(slots_.size(), 1);  // from `captured`, then from the steps
  for (auto &ids : step_slots_)
    for (int s : ids) refs[static_cast<size_t>(s)]++;
  std::vector<int> planned;
  for (size_t s = 0; s < slots_.size(); s++) {
    slots_[s].kind = kind_of(captured[s], captured[s].use_count() > refs[s]);
    if (slots_[s].kind == SlotKind::External) slots_[s].external = captured[s];
    if (slots_[s].kind == SlotKind::Planned) planned.push_back(static_cast<int>(s));
  }
  plan_memory(planned);
  // Drop the capture's references: the steps name slots from here on.
  for (auto &st : steps_) {
    if (st.kernel)
      for (auto &b : st.kernel->bufs) b.reset();
    else
      st.host.buf.reset();
  }
}

std::vector<std::shared_ptr<uop::Buffer>> ReplayGraph::index_slots() {
  std::map<const uop::Buffer *, int> index;
  std::vector<std::shared_ptr<uop::Buffer>> captured;
  auto slot = [&](const std::shared_ptr<uop::Buffer> &b, int64_t step) {
    auto [it, fresh] = index.insert({b.get(), static_cast<int>(slots_.size())});
    if (fresh) {
      Slot s;
      s.dtype = b->dtype;
      s.size = b->size;
      s.buffer_id = b->id;
      s.first = step;
      slots_.push_back(s);
      captured.push_back(b);
    }
    slots_[it->second].last = step;
    return it->second;
  };
  for (size_t i = 0; i < steps_.size(); i++) {
    engine::Step &st = steps_[i];
    std::vector<int> ids;
    if (st.kernel) {
      for (auto &b : st.kernel->bufs) ids.push_back(slot(b, static_cast<int64_t>(i)));
      st.kernel->release.clear();  // planned memory is the graph's; fresh buffers are the caller's
    } else {
      ids.push_back(slot(st.host.buf, static_cast<int64_t>(i)));
    }
    step_slots_.push_back(std::move(ids));
  }
  index_.assign(index.begin(), index.end());
  return captured;
}

void ReplayGraph::plan_memory(std::vector<int> planned) {
  auto bytes_of = [&](int s) {
    const Slot &sl = slots_[static_cast<size_t>(s)];
    return (std::max<int64_t>(1, sl.size * static_cast<int64_t>(itemsize(sl.dtype))) + 63) / 64 * 64;
  };
  std::stable_sort(planned.begin(), planned.end(), [&](int a, int b) { return bytes_of(a) > bytes_of(b); });
  std::vector<int64_t> offset(slots_.size(), 0);
  std::vector<int> placed;
  for (int s : planned) {
    const Slot &sl = slots_[static_cast<size_t>(s)];
    std::vector<std::pair<int64_t, int64_t>> taken;  // [offset, end) of overlapping lifetimes
    for (int p : placed) {
      const Slot &o = slots_[static_cast<size_t>(p)];
      if (o.first <= sl.last && sl.first <= o.last) taken.push_back({offset[p], offset[p] + bytes_of(p)});
    }
    std::sort(taken.begin(), taken.end());
    int64_t at = 0;
    for (auto [begin, end] : taken) {
      if (at + bytes_of(s) <= begin) break;
      at = std::max(at, end);
    }
    offset[s] = at;
    placed.push_back(s);
    intermediate_bytes_ += bytes_of(s);
    planned_bytes_ = std::max(planned_bytes_, at + bytes_of(s));
  }
  // The least any plan needs: the most bytes live at one step.
  std::vector<int64_t> live(steps_.size() + 1, 0);
  for (int s : planned) {
    live[static_cast<size_t>(slots_[static_cast<size_t>(s)].first)] += bytes_of(s);
    live[static_cast<size_t>(slots_[static_cast<size_t>(s)].last) + 1] -= bytes_of(s);
  }
  for (int64_t i = 0, acc = 0; i < static_cast<int64_t>(steps_.size()); i++)
    peak_live_bytes_ = std::max(peak_live_bytes_, acc += live[static_cast<size_t>(i)]);
  if (!planned.empty()) {
    std::shared_ptr<void> arena = engine::allocate_tracked(static_cast<size_t>(planned_bytes_));
    for (int s : planned) {
      Slot &sl = slots_[static_cast<size_t>(s)];
      sl.owned = uop::Buffer::create(sl.dtype, sl.size);
      sl.owned->mem = std::shared_ptr<void>(arena, static_cast<std::byte *>(arena.get()) + offset[s]);
    }
  }
}

int ReplayGraph::slot_of(const uop::Buffer *captured) const {
  auto it = std::lower_bound(index_.begin(), index_.end(), std::make_pair(captured, -1));
  return it != index_.end() && it->first == captured ? it->second : -1;
}

size_t ReplayGraph::kernels() const {
  return static_cast<size_t>(std::count_if(steps_.begin(), steps_.end(), [](const engine::Step &s) { return s.kernel; }));
}

void ReplayGraph::replay(std::vector<std::shared_ptr<uop::Buffer>> &bound, const std::string &who,
                         const std::vector<std::pair<int64_t, double>> &scalars) {
  LOOM_CHECK(bound.size() == slots_.size(), "ReplayGraph::replay: one binding per slot");
  for (size_t s = 0; s < slots_.size(); s++) {
    const Slot &sl = slots_[s];
    switch (sl.kind) {
      case SlotKind::Bound:
        LOOM_CHECK(bound[s] && bound[s]->dtype == sl.dtype && bound[s]->size == sl.size,
                   "ReplayGraph::replay: a bound buffer does not match its slot");
        break;
      case SlotKind::Fresh: bound[s] = uop::Buffer::create(sl.dtype, sl.size); break;
      case SlotKind::Planned: bound[s] = sl.owned; break;
      case SlotKind::External:
        bound[s] = sl.external.lock();
        if (!bound[s])
          throw Error(who + ": the capture reads " + describe(sl) +
                      ", which no tensor holds any more (it was freed or replaced since the capture); "
                      "capture again (Jit::reset) after changing tensors the function reads");
        break;
    }
  }
  if (!engine::launch_graphs()) {
    launches_.reset();
  } else if (!launches_) {
    launches_ = runtime::default_device().launch_graph();
  }
  if (launches_) launches_->begin();
  std::vector<engine::ExecItem> batch;
  auto flush = [&] {
    if (!batch.empty()) engine::run(batch, launches_.get());
    batch.clear();
  };
  for (size_t i = 0; i < steps_.size(); i++) {
    engine::Step &st = steps_[i];
    const std::vector<int> &ids = step_slots_[i];
    if (st.kernel) {
      engine::ExecItem e = *st.kernel;
      for (size_t k = 0; k < ids.size(); k++) e.bufs[k] = bound[static_cast<size_t>(ids[k])];
      for (size_t j = 0; j < e.params.size(); j++)
        if (const int64_t tag = e.params[j]->arg_as<uop::Param>().tag)
          for (const auto &[t, value] : scalars)
            if (t == tag) e.vars[j] = uop::param_bits(e.params[j]->dtype, uop::make_param(e.params[j]->dtype, value));
      batch.push_back(std::move(e));
    } else {
      flush();
      const std::shared_ptr<uop::Buffer> &b = bound[static_cast<size_t>(ids[0])];
      st.host.fn(*b);
      engine::record_host_step({b, st.host.fn, st.host.writes});
    }
  }
  flush();
}

}  // namespace loom::jit
