// A capture (engine/capture.h) as a replayable graph: each distinct buffer
// its steps name becomes a slot with a role (SlotKind); planned slots share
// one arena by lifetime. A replay binds the slots and runs the steps through
// the engine, building, scheduling and compiling nothing.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/capture.h"
#include "runtime/launch_graph.h"
#include "uop/buffer.h"

namespace loom::jit {

// What a replay binds to each distinct buffer of a capture (a slot).
enum class SlotKind {
  Bound,     // the caller binds it on every replay (inputs, state it updates)
  Fresh,     // a new buffer on every replay (outputs)
  Planned,   // the graph's own memory, shared by slots whose lifetimes do not overlap
  External,  // the captured buffer itself, held weakly: a replay after it was freed raises
};

// A capture as a replayable graph: its steps with every buffer replaced by a
// slot. Built once; each replay only binds buffers and runs.
class ReplayGraph {
 public:
  struct Slot {
    SlotKind kind = SlotKind::Planned;
    DType dtype = DType::Float32;
    int64_t size = 0;  // elements
    int64_t buffer_id = 0;  // of the captured buffer (names it in errors)
    int64_t first = 0, last = 0;  // the steps that touch it first and last
    std::shared_ptr<uop::Buffer> owned;      // Planned
    std::weak_ptr<uop::Buffer> external;     // External
  };
  // `kind_of(buffer, held_outside)` classifies each distinct buffer of
  // `capture`, in first-use order; held_outside: something besides the
  // capture still holds it. The capture's steps are consumed.
  using Classify = std::function<SlotKind(const std::shared_ptr<uop::Buffer> &, bool held_outside)>;
  ReplayGraph(engine::Capture &&capture, const Classify &kind_of);

  // The slot of a captured buffer, or -1 where the capture does not touch it.
  int slot_of(const uop::Buffer *captured) const;
  const std::vector<Slot> &slots() const { return slots_; }
  size_t kernels() const;
  size_t host_steps() const { return steps_.size() - kernels(); }
  // Bytes of the Planned slots' memory, and what they would take unshared.
  int64_t planned_bytes() const { return planned_bytes_; }
  int64_t intermediate_bytes() const { return intermediate_bytes_; }
  // The most bytes of Planned slots live at one step: what a perfect plan takes.
  int64_t peak_live_bytes() const { return peak_live_bytes_; }

  // Runs the steps. `bound` has one entry per slot: the caller fills the
  // Bound ones; the replay fills the others (Fresh: new buffers). A kernel's
  // runtime scalar tagged with a tag in `scalars` (tag, value) takes that
  // value (uop::Param). Throws loom::Error, before running anything, when an
  // External buffer was freed. Where launch graphs are on
  // (engine::set_launch_graphs) and the device has them, the kernels between
  // two host steps go to the device as one graph, built on the first such
  // replay and updated where a launch's buffers or scalars changed.
  void replay(std::vector<std::shared_ptr<uop::Buffer>> &bound, const std::string &who,
              const std::vector<std::pair<int64_t, double>> &scalars = {});

 private:
  // Gives each distinct buffer the steps name a slot, in first-use order
  // (step_slots_, index_): those buffers, by slot.
  std::vector<std::shared_ptr<uop::Buffer>> index_slots();
  // Places the Planned slots in one arena: largest first, each at the lowest
  // offset clear of every placed slot whose lifetime overlaps its own.
  void plan_memory(std::vector<int> planned);

  std::vector<engine::Step> steps_;
  std::vector<std::vector<int>> step_slots_;  // per step: the slot of each buffer it names
  std::vector<Slot> slots_;
  std::vector<std::pair<const uop::Buffer *, int>> index_;  // captured buffer -> slot, sorted
  int64_t planned_bytes_ = 0, intermediate_bytes_ = 0, peak_live_bytes_ = 0;
  std::unique_ptr<runtime::LaunchGraph> launches_;  // while launch graphs are on
};

}  // namespace loom::jit
