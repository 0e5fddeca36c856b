// JIT capture and replay. A training step builds the same graph, schedule and
// kernels every call; a Jit runs the function eagerly on call 1, runs it and
// captures every kernel launch and host step on call 2, and from call 3 on
// replays the capture with the call's tensors bound in place, building,
// scheduling and compiling nothing.
//
// What a replay keeps right (the classic JIT pitfalls):
// - State updated in place (Tensor::assign: BatchNorm running statistics,
//   momentum buffers, EMA weights, step counters, an input) is captured
//   whether or not the function returns it, and keeps updating on replay:
//   every call ends by realizing the outputs and every pending update.
// - Scalars passed as `scalars` are inputs of the capture (0-d float64
//   tensors the function computes with: runtime scalars, DESIGN 13, that
//   kernels read as launch arguments, each replay binding the call's
//   values), never constants. Values passed as
//   `baked` are constants of the capture: one that differs from the
//   capture's raises, naming it. A number baked into a kernel that changes
//   between calls 1 and 2 raises at capture.
// - Outputs are new tensors on every call (no autograd graph: run backward
//   inside the function; an output that requires grad raises).
// - Inputs whose shape, dtype or strides differ from the capture's raise; a
//   tensor the capture reads that was freed since raises; a tensor the
//   capture updates in place is read from its current buffer (copied first
//   when something outside still reads its old value).
// - Random numbers (rand, randn, dropout, ...) are drawn again on every
//   replay, advancing the generator as an eager call would. Checks of values
//   (indices in range) run on every replay; any other host read of a value
//   (item(), to_host(), masked_select) raises on replay if the value changed.
// LOOM_JIT=0 runs every call eagerly.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "loom/tensor.h"

namespace loom {

// What a captured function is called with.
struct JitArgs {
  std::vector<Tensor> tensors;  // as given
  std::vector<Tensor> scalars;  // the call's scalars, as 0-d float64 runtime scalars
};

class Jit {
 public:
  using Fn = std::function<std::vector<Tensor>(const JitArgs &)>;
  explicit Jit(Fn fn, std::string name = "jit");
  ~Jit();
  Jit(const Jit &) = delete;
  Jit &operator=(const Jit &) = delete;

  // Every call realizes its outputs and the in-place updates pending at the
  // function's return. The number of tensors, scalars and baked values must
  // stay the same across calls.
  std::vector<Tensor> operator()(const std::vector<Tensor> &tensors, const std::vector<double> &scalars = {},
                                 const std::vector<double> &baked = {});
  // Drops the capture: the next call runs eagerly, the one after captures.
  void reset();

  struct Info {
    int64_t calls = 0;
    bool captured = false;
    int64_t kernels = 0, host_steps = 0;  // in the capture
    // Memory of the capture's intermediates: shared by lifetimes (planned)
    // and what each would take in a buffer of its own.
    int64_t planned_bytes = 0, intermediate_bytes = 0;
    int64_t peak_live_bytes = 0;  // the most intermediates live at one step: the least any plan needs
  };
  Info info() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// False when LOOM_JIT=0 at start, or after set_jit_enabled(false): every
// Jit call then runs eagerly. set_jit_enabled returns the previous setting.
bool jit_enabled();
bool set_jit_enabled(bool on);

}  // namespace loom
