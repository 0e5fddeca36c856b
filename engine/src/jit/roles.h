// The role of each buffer of a captured call on replay, decided from a plain
// description of the call's tensors (the buffers they held): the inputs and
// the values before an in-place update are bound by the caller; the values
// after it, the .grads the call made and the outputs are new buffers every
// replay; other buffers made before the call are read as captured; the rest
// are the graph's own memory.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "jit/replay_graph.h"

namespace loom::jit {

using BufferPtr = std::shared_ptr<uop::Buffer>;

// A captured call's tensors as buffers.
struct CallBuffers {
  int64_t first_new = 0;          // buffers with this id or higher were made by the call
  std::vector<BufferPtr> inputs;  // per input tensor
  // Per tensor updated in place (made before the call): its buffer before
  // the call and after it, and its .grad's when the call made one (else null).
  struct Update {
    BufferPtr in, out, grad;
  };
  std::vector<Update> updates;
  std::vector<BufferPtr> outputs;  // per output; null: not in a buffer (a constant)
};

// Where each of them is in the replay graph: a slot, -1 where the capture does not touch it.
struct CallSlots {
  std::vector<int> inputs;
  struct Update {
    int in = -1, out = -1, grad = -1;
  };
  std::vector<Update> updates;
  std::vector<int> outputs;
};

struct Replay {
  ReplayGraph graph;
  CallSlots slots;
};

// The replay graph of `capture` (consumed) with each buffer's role. Throws
// loom::Error naming `who` when a buffer the call made is held outside the
// capture but is none of the call's tensors: a value the function kept in a
// tensor that a replay would not update.
Replay plan_replay(engine::Capture &&capture, const CallBuffers &call, const std::string &who);

}  // namespace loom::jit
