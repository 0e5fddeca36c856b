// Capture: the record a JIT replays (jit/replay_graph.h). While a Capture is
// active on a thread, everything that thread runs on the device is appended
// to it in order: each
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

// Whether this thread is recording into a capture.
bool capturing();
// Appends a kernel launch to this thread's capture, if any (engine::run calls it).
void record_launch(const ExecItem &item);
// Appends a host step to this thread's capture, if any (a replay inside a
// capture: its host steps are that capture's too).
void record_host_step(const HostStep &step);

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

}  // namespace loom::engine
