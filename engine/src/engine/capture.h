// Capture: the record a JIT replays. While a Capture is active on a thread,
// everything that thread runs on the device is appended to it in order: each
// kernel launch (an ExecItem) and each host step — data copied in from the
// host (replayed as the same bytes, or drawn again for random numbers) and
// values read back to the host (replayed as a check that they still hold).
#pragma once
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/realize.h"
#include "uop/buffer.h"

namespace loom::engine {

// Host <-> device copies; under a capture each is recorded as a host step.
void copy_in(const std::shared_ptr<uop::Buffer> &buf, const void *host, size_t bytes);
void copy_out(void *host, const std::shared_ptr<uop::Buffer> &buf, size_t bytes);

// A host step touches one buffer: it fills it (`writes`) or reads it.
struct HostStep {
  std::shared_ptr<uop::Buffer> buf;
  std::function<void(uop::Buffer &)> fn;  // called with the buffer bound to the step
  bool writes = false;
};

// One recorded step: a kernel launch, or a host step.
struct Step {
  std::optional<ExecItem> kernel;
  HostStep host;
};

struct Capture {
  std::vector<Step> steps;
};

// Records what this thread runs into `capture` while in scope (scopes nest;
// the innermost records).
class CaptureScope {
 public:
  explicit CaptureScope(Capture &capture);
  ~CaptureScope();
  CaptureScope(const CaptureScope &) = delete;
  CaptureScope &operator=(const CaptureScope &) = delete;

 private:
  Capture *prev_;
};

// Appends a kernel launch to this thread's capture, if any (engine::run calls it).
void record_launch(const ExecItem &item);

// Under a capture: the latest step that filled `buf` from the host fills it
// with `refill` on replay instead of the captured bytes (random draws). No-op
// otherwise.
void capture_refill(const std::shared_ptr<uop::Buffer> &buf, std::function<void(uop::Buffer &)> refill);
// Under a capture: appends a host read of `buf` whose `check` runs on every
// replay (a validation of the values, e.g. indices in range). No-op otherwise.
void capture_check(const std::shared_ptr<uop::Buffer> &buf, std::function<void(uop::Buffer &)> check);

// Host <-> device copies that record nothing (what host steps call). Where
// the device's memory is not the host's, a write of a whole buffer of at most
// kHostCopyBytes keeps its bytes as the buffer's host_copy, which host_bytes
// reads; a kernel writing the buffer (engine::run), a copy into it or another
// host write replaces or drops it.
constexpr size_t kHostCopyBytes = size_t{1} << 20;
void write_buffer(uop::Buffer &buf, const void *host, size_t bytes);
void read_buffer(void *host, uop::Buffer &buf, size_t bytes);
// The first `bytes` of `buf` on the host: its host_copy where it has one,
// read in place where the device's memory is the host's, else copied into
// `scratch`. Each way one host read in RunStats, so the CPU counts the reads
// a GPU makes.
const void *host_bytes(uop::Buffer &buf, size_t bytes, std::vector<std::byte> &scratch);
// Whether the default device's memory is the host's (the CPU): a host loop
// over a buffer then costs no copy.
bool host_addressable();
// dst's elements = src's (same dtype and size).
void copy_buffer(uop::Buffer &dst, uop::Buffer &src);

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
  ReplayGraph(Capture &&capture, const Classify &kind_of);

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
  // External buffer was freed.
  void replay(std::vector<std::shared_ptr<uop::Buffer>> &bound, const std::string &who,
              const std::vector<std::pair<int64_t, double>> &scalars = {});

 private:
  std::vector<Step> steps_;
  std::vector<std::vector<int>> step_slots_;  // per step: the slot of each buffer it names
  std::vector<Slot> slots_;
  std::vector<std::pair<const uop::Buffer *, int>> index_;  // captured buffer -> slot, sorted
  int64_t planned_bytes_ = 0, intermediate_bytes_ = 0, peak_live_bytes_ = 0;
};

}  // namespace loom::engine
