#include "schedule/schedule.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "knobs/knobs.h"
#include "loom/error.h"
#include "schedule/donate.h"
#include "schedule/explain.h"
#include "schedule/gemm.h"
#include "schedule/lifetime.h"
#include "schedule/offsets.h"
#include "schedule/realize_points.h"
#include "schedule/schedule_cache.h"
#include "schedule/split_reduce.h"
#include "schedule/substitute.h"
#include "uop/graph.h"
#include "uop/node_map.h"

namespace loom::schedule {

using uop::base_of;
using uop::NodeMap;
using uop::NodeSet;
using uop::shape_of;
using uop::Op;
using uop::UOp;

namespace {

// Each ALU op once per element of its result, a reduction once per input element.
int64_t work_needed(const std::vector<UOpRef> &order) {
  int64_t w = 0;
  for (auto &u : order) {
    if (uop::is_alu(u->op)) w += shape::prod(shape_of(u));
    else if (u->op == Op::ReduceAxis) w += shape::prod(shape_of(u->src[0]));
  }
  return w;
}

std::string kernel_name(const UOpRef &value, const Shape &out_shape) {
  bool reduce = false;
  bool scan = false;
  for (auto &u : uop::toposort(value)) {
    reduce |= u->op == Op::ReduceAxis;
    scan |= u->op == Op::Scan;
  }
  std::string n = value->op == Op::Sort ? "sort" : scan ? "s" : reduce ? "r" : "E";
  for (auto d : out_shape) n += "_" + std::to_string(d);
  if (out_shape.empty()) n += "_0d";
  return n;
}

// The order of `from`'s dims that `st` reads a node of shape `from` in, when
// it does nothing else: one unmasked view at offset 0 whose strides are
// `from`'s row-major strides permuted (dims of one element anywhere).
std::optional<std::vector<int64_t>> only_permutes(const shape::ShapeTracker &st, const Shape &from) {
  if (!st.single_plain() || st.views[0].offset != 0 || st.shape().size() != from.size()) return std::nullopt;
  const shape::Strides row = shape::contiguous_strides(from);
  std::vector<bool> used(from.size(), false);
  std::vector<int64_t> order;
  for (size_t i = 0; i < from.size(); i++) {
    const int64_t size = st.shape()[i], stride = st.views[0].strides[i];
    size_t j = 0;
    while (j < from.size() && (used[j] || from[j] != size || (size != 1 && row[j] != stride))) j++;
    if (j == from.size()) return std::nullopt;
    used[j] = true;
    order.push_back(static_cast<int64_t>(j));
  }
  return order;
}

// One kernel's AST under construction: lazy graphs copied into kernel form,
// realized sources (and buffers) becoming loads from DEFINE_GLOBAL slots.
class KernelBuilder {
 public:
  using Buffers = NodeMap<std::shared_ptr<uop::Buffer>>;
  KernelBuilder(const std::shared_ptr<uop::Buffer> &out, const NodeSet &rp, const Buffers &buffer_of)
      : rp_(rp), buffer_of_(buffer_of) {
    global(out);  // slot 0: the output
  }

  UOpRef global(const std::shared_ptr<uop::Buffer> &b) {
    auto [slot, fresh] = slot_of_.insert(b.get());
    if (fresh) {
      *slot = static_cast<int64_t>(item_.bufs.size());
      item_.bufs.push_back(b);
    }
    return UOp::make(Op::DefineGlobal, b->dtype, {}, *slot);
  }

  // `root`: u is the node this kernel computes (not read from its own buffer).
  UOpRef to_kernel(const UOpRef &u, bool root) {
    if (const UOpRef *m = memo_.find(u.get())) return *m;
    UOpRef r;
    if (u->is_param()) {  // a runtime scalar: the kernel's next DEFINE_VAR
      r = UOp::make(Op::DefineVar, u->dtype, {}, static_cast<int64_t>(item_.vars.size()));
      item_.vars.push_back(u);
    } else if (u->op == Op::Buffer) {
      r = UOp::make(Op::View, u->dtype, {global(u->arg_as<uop::BufferArg>().buffer)},
                    shape::ShapeTracker::from_shape(shape_of(u)));
    } else if (!root && rp_.contains(u.get())) {
      auto &b = *buffer_of_.find(u.get());
      r = UOp::make(Op::View, u->dtype, {global(b)}, shape::ShapeTracker::from_shape(shape_of(u)));
    } else if (u->op == Op::View) {
      r = view_of(to_kernel(u->src[0], false), u->arg_as<shape::ShapeTracker>());
    } else if (u->op == Op::Contiguous) {
      r = to_kernel(u->src[0], false);
    } else {
      std::vector<UOpRef> src;
      for (auto &s : u->src) src.push_back(to_kernel(s, false));
      r = u->with_src(src);
    }
    memo_[u.get()] = r;
    return r;
  }

  // `st` over the kernel-form `src`: folded into a load's view; pushed through
  // an elementwise node when it only permutes it (an elementwise result laid
  // out as torch lays it out, tensor/layout.cpp, is such a view over the node
  // computed in its operands' order: inlined, the kernel reads the operands
  // in place, as without the layout).
  UOpRef view_of(const UOpRef &src, const shape::ShapeTracker &st) {
    if (src->op == Op::View && src->src[0]->op == Op::DefineGlobal)  // fold into the load's view
      return UOp::make(Op::View, src->dtype, {src->src[0]}, st.compose_onto(src->arg_as<shape::ShapeTracker>()));
    if (uop::is_alu(src->op) || src->op == Op::Cast)
      if (const auto order = only_permutes(st, shape_of(src))) return permuted(src, *order);
    return UOp::make(Op::View, src->dtype, {src}, st);
  }
  // The kernel-form elementwise `u` with its dims in `order`: its sources permuted.
  UOpRef permuted(const UOpRef &u, const std::vector<int64_t> &order) {
    std::vector<UOpRef> srcs;
    for (const UOpRef &s : u->src) {
      if (s->op == Op::View)
        srcs.push_back(UOp::make(Op::View, s->dtype, {s->src[0]}, s->arg_as<shape::ShapeTracker>().permute(order)));
      else if (uop::is_alu(s->op) || s->op == Op::Cast)
        srcs.push_back(permuted(s, order));
      else
        srcs.push_back(UOp::make(Op::View, s->dtype, {s}, shape::ShapeTracker::from_shape(shape_of(s)).permute(order)));
    }
    return u->with_src(std::move(srcs));
  }

  ScheduleItem item(const UOpRef &store, std::string name) {
    item_.ast = shift_offsets(UOp::make(Op::Sink, DType::Bool, {store}), item_.bufs.size(), item_.shifts);
    item_.name = std::move(name);
    return std::move(item_);
  }

 private:
  const NodeSet &rp_;
  const Buffers &buffer_of_;
  ScheduleItem item_;
  NodeMap<int64_t> slot_of_;  // buffer -> DEFINE_GLOBAL slot
  NodeMap<UOpRef> memo_;
};

// Where a template finds each buffer and runtime scalar of the schedule
// build() made: a buffer's slot (ScheduleTemplate), a scalar's position.
struct Slots {
  NodeMap<int64_t> buffer, param;
};

// Cuts the graph into kernels (order: the topological order of the SINK of
// the outputs). Returns the same schedule as a template, its buffers as
// positions in the order; template_items() gives it its items once the
// passes after the cut have run.
std::shared_ptr<ScheduleTemplate> build(const std::vector<UOpRef> &order, const std::vector<UOpRef> &outputs,
                                        const NodeMap<std::shared_ptr<uop::Buffer>> &donated, Schedule &sched,
                                        NodeMap<UOpRef> &view_of, Slots &slots) {
  const bool explain_cut = explaining();
  Reasons why;
  std::vector<std::vector<std::string>> kernels_of;  // per realized node, when explaining
  auto rp = find_realize_points(order, outputs, explain_cut ? &why : nullptr);
  auto tmpl = std::make_shared<ScheduleTemplate>();
  sched.work_needed = tmpl->work_needed = work_needed(order);
  NodeMap<int64_t> &slot = slots.buffer;
  for (size_t i = 0; i < order.size(); i++) {
    if (order[i]->op == Op::Buffer) slot[order[i]->arg_as<uop::BufferArg>().buffer.get()] = static_cast<int64_t>(i);
    if (order[i]->is_param()) slots.param[order[i].get()] = static_cast<int64_t>(i);
  }
  NodeMap<std::shared_ptr<uop::Buffer>> buffer_of;
  for (size_t i = 0; i < order.size(); i++) {
    const UOpRef &node = order[i];
    if (!rp.contains(node.get())) continue;
    const Shape &shape = shape_of(node);
    const std::shared_ptr<uop::Buffer> *donation = donated.find(node.get());
    auto out = donation ? *donation : uop::Buffer::create(node->dtype, shape::prod(shape));
    const size_t first_item = sched.items.size();
    if (donation && explain_cut) why[node.get()] = "a WRITE donated its base's buffer: its stores go there in place";
    buffer_of[node.get()] = out;
    int64_t donor = -1;
    if (donation) {
      const int64_t *at = slot.find(out.get());
      LOOM_CHECK(at && *at >= 0, "a donated buffer is not a BUFFER node of the graph");
      donor = *at;
    } else {
      slot[out.get()] = ~static_cast<int64_t>(i);
    }
    tmpl->realized.push_back({static_cast<int64_t>(i), donor, shape::ShapeTracker::from_shape(shape)});
    // A Write is a copy of its base into the buffer (none when the base's own
    // buffer is written), then its stores; a whole overwrite is just its value.
    const bool write = node->op == Op::Write && !is_full_overwrite(node.get());
    const bool copy_base = write && !donation;
    if (!write || copy_base) {
      KernelBuilder copy(out, rp, buffer_of);
      const UOpRef &what = node->op != Op::Write ? node : write ? node->src[0] : node->src[1];
      UOpRef value = copy.to_kernel(what, what == node);
      UOpRef store = UOp::make(Op::Store, DType::Bool, {copy.global(out), value},
                               shape::ShapeTracker::from_shape(shape_of(what)));
      if (out->size > 0) sched.items.push_back(copy.item(store, kernel_name(value, shape_of(what))));
    }
    if (write && shape::prod(shape_of(node->src[1])) > 0) {
      KernelBuilder stores(out, rp, buffer_of);
      std::vector<UOpRef> src{stores.global(out), stores.to_kernel(node->src[1], false)};
      if (node->src.size() > 2) src.push_back(stores.to_kernel(node->src[2], false));
      std::string name = "w";
      for (auto d : shape_of(node->src[1])) name += "_" + std::to_string(d);
      sched.items.push_back(stores.item(UOp::make(Op::Store, DType::Bool, src, node->arg), name));
    }
    UOpRef bv = uop::buffer_view(out, tmpl->realized.back().view);
    view_of[node.get()] = bv;
    sched.realizes.push_back({node, std::move(bv)});
    if (explain_cut) {
      kernels_of.emplace_back();
      for (size_t k = first_item; k < sched.items.size(); k++) kernels_of.back().push_back(sched.items[k].name);
    }
  }
  if (explain_cut) sched.explanation = tmpl->explanation = explain(order, why, kernels_of);
  return tmpl;
}

// The schedule's items, once the passes after the cut have split them, as
// the template's: a buffer no node of the graph has (a split's scratch
// buffer) becomes the template's too, its slot ~(nodes + its index).
void template_items(const Schedule &sched, Slots &slots, size_t nodes, ScheduleTemplate &tmpl) {
  tmpl.items.reserve(sched.items.size());
  for (auto &item : sched.items) {
    ScheduleTemplate::Item t{item.ast, item.name, {}, {}, item.shifts, item.gemm};
    for (auto &b : item.bufs) {
      auto [slot, fresh] = slots.buffer.insert(b.get());
      if (fresh) {
        *slot = ~static_cast<int64_t>(nodes + tmpl.scratch.size());
        tmpl.scratch.push_back({b->dtype, b->size});
      }
      t.slots.push_back(*slot);
    }
    for (auto &v : item.vars) t.vars.push_back(*slots.param.find(v.get()));
    tmpl.items.push_back(std::move(t));
  }
}

// The template's schedule over this graph's buffers (and new ones); `bases`,
// this graph's (GraphKey): a buffer's views that start elsewhere than in the
// template's graph move the pointer shifts of the kernels reading it. With
// `kept` (the lifetimes decided for the template's realized nodes), a node
// that keeps no buffer gets no view of it: its buffer is transient at once.
void instantiate(const ScheduleTemplate &tmpl, const std::vector<const UOpRef *> &order,
                 const std::vector<std::pair<int64_t, int64_t>> &bases, const Kept *kept, Schedule &sched,
                 NodeMap<UOpRef> &view_of) {
  sched.work_needed = tmpl.work_needed;
  sched.explanation = tmpl.explanation;
  auto buffer_at = [&](int64_t position) -> const std::shared_ptr<uop::Buffer> & {
    return (*order[static_cast<size_t>(position)])->arg_as<uop::BufferArg>().buffer;
  };
  std::vector<std::shared_ptr<uop::Buffer>> fresh(order.size() + tmpl.scratch.size());
  for (size_t j = 0; j < tmpl.scratch.size(); j++) {
    const auto &[dtype, size] = tmpl.scratch[j];
    sched.transient.push_back(fresh[order.size() + j] = uop::Buffer::create(dtype, size));
  }
  sched.realizes.reserve(tmpl.realized.size());
  for (size_t j = 0; j < tmpl.realized.size(); j++) {
    const auto &[position, donor, row_major] = tmpl.realized[j];
    const UOpRef &node = *order[static_cast<size_t>(position)];
    auto out = donor >= 0 ? buffer_at(donor) : uop::Buffer::create(node->dtype, row_major.numel());
    if (donor < 0) fresh[static_cast<size_t>(position)] = out;
    if (kept && !(*kept)[j]) {
      sched.transient.push_back(std::move(out));
      continue;
    }
    // A write into its base's buffer: the base often is that buffer's view already.
    const bool base_is_view =
        donor >= 0 && node->op == Op::Write && uop::is_buffer_view(node->src[0], *out, row_major.shape());
    UOpRef bv = base_is_view ? node->src[0] : uop::buffer_view(out, row_major);
    view_of[node.get()] = bv;
    sched.realizes.push_back({node, std::move(bv)});
  }
  std::vector<int64_t> moved;  // per BUFFER position: how far its views moved (empty: none did)
  for (size_t i = 0; i < bases.size(); i++)
    if (const int64_t by = bases[i].second - tmpl.bases[i].second) {
      if (moved.empty()) moved.assign(order.size(), 0);
      moved[static_cast<size_t>(bases[i].first)] = by;
    }
  sched.items.reserve(tmpl.items.size());
  for (auto &t : tmpl.items) {
    ScheduleItem item{t.ast, {}, {}, t.shifts, t.name, t.gemm};
    item.bufs.reserve(t.slots.size());
    item.vars.reserve(t.vars.size());
    for (int64_t s : t.slots) item.bufs.push_back(s >= 0 ? buffer_at(s) : fresh[static_cast<size_t>(~s)]);
    if (!moved.empty())
      for (size_t k = 0; k < t.slots.size(); k++)
        if (t.slots[k] >= 0) item.shifts[k] += moved[static_cast<size_t>(t.slots[k])];
    for (int64_t v : t.vars) item.vars.push_back(*order[static_cast<size_t>(v)]);
    sched.items.push_back(std::move(item));
  }
}

// LOOM_DEBUG=4: the schedule after a pass, one line per kernel (its name,
// buffers by id, runtime scalars and pointer shifts). A graph cut now (not
// from the cache) while explaining: its kernels' names after the pass, in the
// explanation.
void log_pass(const char *pass, Schedule &sched) {
  if (sched.explanation && !sched.cached) {
    std::vector<std::string> names;
    for (const ScheduleItem &item : sched.items) names.push_back(item.name);
    sched.explanation->passes.push_back({pass, std::move(names)});
  }
  if (knobs::debug() < 4) return;
  std::string text = "--- schedule after " + std::string(pass) + ": " + std::to_string(sched.items.size()) +
                     " kernel(s)" + (sched.cached ? " (from the schedule cache)" : "") + "\n";
  for (const ScheduleItem &item : sched.items) {
    text += "  " + item.name + " buffers";
    for (size_t i = 0; i < item.bufs.size(); i++) {
      text += " " + std::to_string(item.bufs[i]->id);
      if (i < item.shifts.size() && item.shifts[i]) text += "+" + std::to_string(item.shifts[i]);
    }
    if (!item.vars.empty()) text += ", " + std::to_string(item.vars.size()) + " runtime scalar(s)";
    text += "\n";
  }
  std::fputs(text.c_str(), stderr);
}

// The results (views of realized buffers) and the realizes the graph's raw
// nodes need, once the kernels are known.
void collect_results(const std::vector<UOpRef> &raw_outputs, const std::vector<UOpRef> &outputs,
                     const Rebuilt &rebuilt, const NodeMap<UOpRef> &view_of, Schedule &sched) {
  // A raw node whose substitute got a buffer is remembered too: the caller's
  // graphs hold the raw node, and computing it again (after its stores went
  // into a donated buffer) would apply an update twice.
  for (auto &[raw, sub] : rebuilt) {
    UOpRef r = raw.lock(), s = sub.lock();
    if (!r || !s) continue;
    if (const UOpRef *bv = view_of.find(s.get())) sched.realizes.push_back({r, *bv});
  }
  for (size_t i = 0; i < outputs.size(); i++) {
    const UOpRef &o = outputs[i];
    const UOpRef &b = base_of(o);
    if (is_leaf(uop::root_of(o))) {  // views of a buffer or a broadcast constant need no kernel
      sched.results.push_back(o);
      continue;
    }
    const UOpRef &bv = *view_of.find(b.get());
    if (raw_outputs[i] != o) sched.realizes.push_back({base_of(raw_outputs[i]), bv});
    if (o->op == Op::View)
      sched.results.push_back(uop::view(bv, o->arg_as<shape::ShapeTracker>().compose_onto(uop::tracker_of(bv))));
    else
      sched.results.push_back(bv);
  }
}

}  // namespace

// The scheduler's passes, in order; LOOM_DEBUG=4 prints the kernels after each
// pass that makes or changes them:
//   substitute  nodes an earlier realize computed become views of its buffers
//   donate      writes whose base's buffer nothing else can read store into it
//   cut         realize points and one kernel per realized node (build), or,
//               for a structure scheduled before, the schedule cache's
//               template over this graph's buffers and scalars (instantiate:
//               its kernels split and marked already, the three passes below skipped)
//   results     each output as a view of its buffer
//   lifetimes   intermediates no one can ask for become transient (decided
//               once per cached structure and reference counts; a decision
//               found is applied by instantiate, which then makes no views
//               of the transient buffers)
//   gemms       large float32 GEMMs split into packs, a GEMM and an epilogue
//   reductions  long reductions with few outputs split in two
//   mark gemms  each canonical GEMM kernel's shape on its item
Schedule create_schedule(const std::vector<UOpRef> &raw_outputs) {
  const UOpRef raw_sink = UOp::make(Op::Sink, DType::Bool, raw_outputs);
  std::vector<const UOpRef *> order = uop::toposort_refs(raw_sink);
  Rebuilt rebuilt;
  const UOpRef sink = substitute_realized(order, rebuilt);
  const std::vector<UOpRef> outputs = sink->src.vec();
  const size_t nodes = order.size();
  if (sink != raw_sink) order = uop::toposort_refs(sink, nodes);

  Schedule sched;
  NodeMap<UOpRef> view_of;  // each realized node's buffer, viewed in its shape
  GraphKey key = graph_key(order);
  // The counts decide the donations only where substitution changed nothing
  // (otherwise the raw graphs' references count too).
  RefCounts refs = key.writes && sink == raw_sink ? ref_counts(order) : RefCounts{};
  std::optional<Decided> decided = refs.empty() ? std::nullopt : find_decided(key, refs);
  NodeMap<std::shared_ptr<uop::Buffer>> donated;
  if (decided) {
    key.donated = std::move(decided->donated);
    for (int64_t at : key.donated) {
      const uop::UOp *w = order[static_cast<size_t>(at)]->get();
      donated[w] = donated_buffer(w);
    }
  } else if (key.writes) {
    donated = find_donations(raw_outputs, outputs, nodes);
    sched.donations_checked = true;
    for (size_t i = 0; i < order.size(); i++)
      if (donated.contains(order[i]->get())) key.donated.push_back(static_cast<int64_t>(i));
  }
  std::shared_ptr<ScheduleTemplate> built;  // stored once the passes below have run (their log is in its explanation)
  Slots slots;
  Kept kept = decided ? std::move(decided->kept) : Kept{};
  bool lifetimes_applied = false;  // by instantiate, from the decision
  if (auto tmpl = decided ? std::move(decided->schedule) : find_template(key)) {
    // A decision's graph was not substituted (refs), so its realizes are the template's realized nodes.
    lifetimes_applied = kept.size() == tmpl->realized.size();
    instantiate(*tmpl, order, key.bases, lifetimes_applied ? &kept : nullptr, sched, view_of);
    sched.cached = true;
  } else {
    std::vector<UOpRef> nodes;
    for (const UOpRef *u : order) nodes.push_back(*u);
    built = build(nodes, outputs, donated, sched, view_of, slots);
    built->bases = key.bases;
  }
  log_pass("cut", sched);
  collect_results(raw_outputs, outputs, rebuilt, view_of, sched);
  if (!lifetimes_applied) {
    if (kept.size() != sched.realizes.size()) {
      kept = find_kept(raw_sink, sink, donated, sched, nodes);
      if (sched.cached && !refs.empty()) remember_decision(key, std::move(refs), kept);
    }
    drop_transient(sched, kept);
  }
  if (built) {  // a template's items are split already
    split_gemms(sched);
    log_pass("gemms", sched);
    split_reductions(sched);
    log_pass("reductions", sched);
    mark_gemms(sched);
    template_items(sched, slots, order.size(), *built);
    store_template(key, std::move(built), std::move(refs));
  }
  return sched;
}

std::vector<DType> buf_dtypes(const ScheduleItem &item) {
  std::vector<DType> dts;
  dts.reserve(item.bufs.size());
  for (auto &b : item.bufs) dts.push_back(b->dtype);
  return dts;
}

void commit(const Schedule &sched) {
  for (auto &[node, bv] : sched.realizes) remember_realized(node, bv);
}

}  // namespace loom::schedule
