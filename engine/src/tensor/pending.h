// In-place updates waiting to run. assign only records the new value; torch
// would have computed it already. Every realize therefore computes the pending
// updates too, in the same schedule, and their tensors take the buffers. Each
// step of a training loop then holds one step's graph per updated state
// (running statistics, momentum, weights), not a chain of every step's graphs
// and the buffers they read.
#pragma once
#include <functional>
#include <memory>
#include <vector>

#include "loom/tensor.h"

namespace loom::tensor {

// Records that `target` holds an update not computed yet; `before` is its
// value before the update.
void note_update(const std::shared_ptr<TensorImpl> &target, const UOpRef &before);
// While set, sees every note_update on this thread (the JIT's capture tracks
// the tensors a call updates). Returns the previous observer.
using UpdateObserver = std::function<void(const std::shared_ptr<TensorImpl> &target, const UOpRef &before)>;
UpdateObserver *set_update_observer(UpdateObserver *observer);
// engine::realize of `outs` and of every pending update, in one schedule.
std::vector<UOpRef> realize_with_updates(const std::vector<UOpRef> &outs);
// `outs` and the values of the pending updates: what realize_with_updates
// would schedule, the updates left pending.
std::vector<UOpRef> with_pending_updates(const std::vector<UOpRef> &outs);
// `impl` took the buffer `now` for its value `before`: its live views that
// read `before` directly read the buffer instead, and so does its base when
// it holds `before` itself, so they stop holding the graph that computed it
// (and every buffer that graph reads).
void rebase_views(TensorImpl &impl, const UOpRef &before, const UOpRef &now);

}  // namespace loom::tensor
