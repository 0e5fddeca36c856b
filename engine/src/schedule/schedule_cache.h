// The schedule cache: a training loop, or any loop of in-place updates,
// schedules a graph of the same structure over the same or new buffers every
// step. The scheduler's decisions (realize points, kernels, their ASTs and
// names) depend only on the graph's structure with its buffers as
// placeholders, the outputs asked for and which writes were donated their
// base's buffer, so a schedule is kept per such key and replayed with the
// step's own buffers, without cutting the graph again. Which writes are
// donated depends, beside the structure, only on how many references each
// node has (schedule/donate.h): the cache also remembers the counts its
// decision was made under, and an equal structure with equal counts reuses
// the decision without checking the graph again. The same holds for which
// buffers are transient (schedule/lifetime.h), once a realize of the cached
// structure has decided them under those counts.
#pragma once
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "schedule/lifetime.h"
#include "uop/uop.h"

namespace loom::schedule {

struct GemmShape;  // schedule/gemm_shape.h

using uop::UOpRef;

struct Explanation;  // schedule/explain.h

// A graph's structure, buffers as placeholders: per node of the topological
// order (ending in the SINK of the outputs) its op, dtype, sources as
// positions in the order, and a BUFFER's size in place of its buffer; the
// args compare by value, but for a runtime scalar's (a placeholder, as a
// buffer is).
//
// A view of a buffer keys its start in the buffer relative to a base, a
// multiple of schedule/offsets.h's kShiftUnit: the first view of that buffer
// in the order keys its start modulo the unit, later ones their distance
// from the base. So a graph slicing a batch at another start has the key of
// the one before, and its kernels only move the buffer's pointer. (Not for a
// buffer a WRITE updates or a node reads whole: those starts stay in the key.)
struct GraphKey {
  std::vector<int64_t> code;
  std::vector<const uop::Arg *> args;  // into the live graph, or `owned`, while the key is used
  std::deque<uop::Arg> owned;          // the relative views' args
  std::vector<std::pair<int64_t, int64_t>> bases;  // (position of a BUFFER node, its base), in order
  size_t hash = 0;                     // of the structure (not of `donated`)
  bool writes = false;                 // the graph has a WRITE
  std::vector<int64_t> donated;        // positions of the WRITEs whose stores go into their base's buffer, set by the caller
};
GraphKey graph_key(const std::vector<const UOpRef *> &order);

// A schedule, its kernels split (schedule/gemm.h, schedule/split_reduce.h),
// with its buffers as positions in the order: slot >= 0 is the BUFFER node
// at that position; slot < 0 a buffer the schedule creates: for ~slot below
// the order's length the buffer realizing the node at that position, past
// it the split's scratch buffer ~slot - length.
struct ScheduleTemplate {
  struct Item {
    UOpRef ast;
    std::string name;
    std::vector<int64_t> slots;
    std::vector<int64_t> vars;  // per DEFINE_VAR slot: the position of its runtime scalar
    shape::PoolVector<int64_t> shifts;  // ScheduleItem::shifts (the key fixes the views' offsets)
    std::shared_ptr<const GemmShape> gemm;  // ScheduleItem::gemm
  };
  struct Realized {
    int64_t position;  // of the node that gets a buffer
    int64_t donor;     // position of the BUFFER node whose buffer it writes, or -1 for a new one
    shape::ShapeTracker view;  // the node's shape, row-major: its buffer's view
  };
  std::vector<Item> items;
  std::vector<Realized> realized;  // in the order the nodes got their buffers
  std::vector<std::pair<DType, int64_t>> scratch;  // the splits' buffers (transient): dtype and element count
  std::vector<std::pair<int64_t, int64_t>> bases;  // the GraphKey's, when the template was built
  int64_t work_needed = 0;
  std::shared_ptr<Explanation> explanation;  // when the cut was explained (schedule/explain.h)
};

// Per node of the order, its strong references: with the structure, all the
// donation check reads (schedule/donate.h).
using RefCounts = std::vector<long>;
RefCounts ref_counts(const std::vector<const UOpRef *> &order);

// The template stored under an equal key (structure and donations), if any.
std::shared_ptr<const ScheduleTemplate> find_template(const GraphKey &key);
// A template of an equal structure whose donations were decided (or last
// found again) under equal reference counts, with those donations' positions
// and, when a realize of the template decided them under those counts, which
// of its realized nodes keep their buffers (empty: not decided yet).
struct Decided {
  std::vector<int64_t> donated;
  std::shared_ptr<const ScheduleTemplate> schedule;
  Kept kept;
};
std::optional<Decided> find_decided(const GraphKey &key, const RefCounts &refs);
// `refs` (empty: none known) are the counts the key's donations were decided under.
void store_template(const GraphKey &key, std::shared_ptr<const ScheduleTemplate> t, RefCounts refs);
// The entry of an equal key remembers `refs` as its decision's counts, and
// `kept` as the lifetimes a realize of its template decided under them.
// (Not for a template built by that realize: the template's own references,
// which its later realizes count before deciding, were not there when the
// realize that built it counted.)
void remember_decision(const GraphKey &key, RefCounts refs, Kept kept);
size_t cached_schedules();
void clear_schedule_cache();  // each structure is cut again when next realized

}  // namespace loom::schedule
