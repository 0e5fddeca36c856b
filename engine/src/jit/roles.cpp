#include "jit/roles.h"

#include <optional>
#include <unordered_map>

#include "loom/error.h"

namespace loom::jit {

namespace {

// The slot kind of each buffer the call's tensors hold, in the order the
// roles override one another: an input is bound; an updated tensor's value
// before is bound and its value after fresh (even where it is an input's
// buffer); its .grad and the outputs are fresh unless named already.
std::unordered_map<const uop::Buffer *, SlotKind> tensor_kinds(const CallBuffers &call) {
  std::unordered_map<const uop::Buffer *, SlotKind> kind;
  for (const BufferPtr &b : call.inputs) kind[b.get()] = SlotKind::Bound;
  for (const CallBuffers::Update &u : call.updates) {
    kind[u.in.get()] = SlotKind::Bound;
    if (u.out != u.in) kind[u.out.get()] = SlotKind::Fresh;
    if (u.grad) kind.emplace(u.grad.get(), SlotKind::Fresh);
  }
  for (const BufferPtr &b : call.outputs)
    if (b) kind.emplace(b.get(), SlotKind::Fresh);
  return kind;
}

}  // namespace

Replay plan_replay(engine::Capture &&capture, const CallBuffers &call, const std::string &who) {
  const std::unordered_map<const uop::Buffer *, SlotKind> kinds = tensor_kinds(call);
  std::optional<std::string> kept;
  auto kind_of = [&](const BufferPtr &b, bool held_outside) {
    if (auto it = kinds.find(b.get()); it != kinds.end()) return it->second;
    if (b->id < call.first_new) return SlotKind::External;
    if (held_outside && !kept)
      kept = "buffer " + std::to_string(b->id) + " (" + dtype_name(b->dtype) + ", " + std::to_string(b->size) +
             " elements)";
    return SlotKind::Planned;
  };
  Replay r{ReplayGraph(std::move(capture), kind_of), {}};
  if (kept)
    throw Error(who + ": the function left a value it computed (" + *kept +
                ") held by a tensor that is not among its outputs, the tensors it updates in place or their .grad; "
                "a replay would not update that tensor. Return it, or assign it into a tensor made before the call");
  auto slot = [&](const BufferPtr &b) { return b ? r.graph.slot_of(b.get()) : -1; };
  for (const BufferPtr &b : call.inputs) r.slots.inputs.push_back(slot(b));
  for (const CallBuffers::Update &u : call.updates) r.slots.updates.push_back({slot(u.in), slot(u.out), slot(u.grad)});
  for (const BufferPtr &b : call.outputs) r.slots.outputs.push_back(slot(b));
  return r;
}

}  // namespace loom::jit
