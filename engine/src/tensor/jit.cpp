// loom::Jit (loom/jit.h): the Tensor side of capture and replay. The engine
// records the steps (engine/capture.h) and jit/ replays them, deciding each
// buffer's role from the buffers the call's tensors held (jit/roles.h); this
// file finds those tensors — the inputs, the tensors updated in place (and
// their .grad), the outputs — and moves them onto the buffers a replay wrote.
#include "loom/jit.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <optional>
#include <unordered_map>
#include <utility>

#include "engine/capture.h"
#include "jit/kernel_text.h"
#include "jit/roles.h"
#include "jit/signature.h"
#include "knobs/knobs.h"
#include "tensor/impl.h"
#include "tensor/ops_util.h"
#include "tensor/pending.h"

namespace loom {

using namespace tensor;
using BufferPtr = std::shared_ptr<uop::Buffer>;
using ImplPtr = std::shared_ptr<TensorImpl>;

namespace {

bool direct_buffer_view(const UOpRef &u) {
  return u->op == Op::Buffer || (u->op == Op::View && u->src[0]->op == Op::Buffer);
}
const BufferPtr &buffer_of(const UOpRef &u) { return root_of(u)->arg_as<uop::BufferArg>().buffer; }
UOpRef view_of(const BufferPtr &b, const shape::ShapeTracker &st) {
  return view(UOp::make(Op::Buffer, b->dtype, {}, uop::BufferArg{b}), st);
}

// The tensor whose .grad goes with an updated tensor's state: the tensor
// itself, or a view of it that holds one (an update of a view lands in its
// base, and a Parameter made from a tensor is a view of that tensor).
std::shared_ptr<TensorImpl> grad_holder(const std::shared_ptr<TensorImpl> &impl) {
  if (impl->grad) return impl;
  for (const auto &w : impl->views)
    if (auto v = w.lock(); v && v->grad) return v;
  return nullptr;
}

// Makes t's value a view of one buffer: realizes it, copying a constant or a
// nested view into a buffer of its own (the handle keeps its identity, so an
// in-place update by the function still reaches the caller's tensor).
void bufferize(const Tensor &t) {
  if (direct_buffer_view(t.uop())) return;
  Tensor handle = t;
  handle.realize();
  if (direct_buffer_view(t.uop())) return;
  Tensor copy = make_tensor(row_major(t.uop()));
  copy.realize();
  TensorImpl::of(t)->uop = copy.uop();
}

// Whether nothing but the tensor and its live views reads its buffer (its
// value is a direct view of one).
bool only_holder(const TensorImpl &impl) {
  const UOpRef &u = impl.uop;
  const UOpRef &node = u->op == Op::Buffer ? u : u->src[0];  // the BUFFER node
  long same = 1, over = 0;  // views with the tensor's own node; views over the BUFFER node
  for (auto &w : impl.views)
    if (auto v = w.lock()) {
      if (v->uop == u) same++;
      else if (v->uop->op == Op::View && v->uop->src[0] == node) over++;
    }
  if (u->op == Op::Buffer) return node.use_count() <= same + over;
  return u.use_count() <= same && node.use_count() <= 1 + over;
}

std::string layout_str(const Tensor &t) {
  return shape_str(t.shape()) + " " + dtype_name(t.dtype()) + " strides " + shape_str(t.strides()) + " offset " +
         std::to_string(t.storage_offset());
}

jit::InputViews input_views(const std::vector<Tensor> &t) {
  jit::InputViews in;
  for (const Tensor &x : t) {
    in.buffers.push_back(buffer_of(x.uop()));
    in.views.push_back(tracker_of(x.uop()));
  }
  return in;
}

// Tags no other Jit's scalars use.
int64_t reserve_tags(size_t n) {
  static std::atomic<int64_t> next{1};
  return next.fetch_add(static_cast<int64_t>(std::max<size_t>(n, 1)));
}

}  // namespace

namespace {
std::atomic<bool> g_jit_enabled{knobs::jit()};
}

bool jit_enabled() { return g_jit_enabled.load(); }
bool set_jit_enabled(bool on) { return g_jit_enabled.exchange(on); }

struct Jit::Impl {
  Fn fn;
  std::string name;
  int64_t calls = 0;
  jit::CallSignature signature;  // call 1's
  std::vector<jit::KernelText> first_kernels;  // the kernels call 1 ran (to spot constants that change)
  bool retried = false;                   // a capture was retried (see capture())
  std::vector<bool> input_updated;        // per input: call 1 updated it in place

  // A tensor the capture updates in place: read from `in`, left in `out`.
  struct State {
    std::weak_ptr<TensorImpl> impl;
    std::weak_ptr<TensorImpl> grad_holder;  // whose .grad `grad` is (see grad_holder())
    int arg = -1;  // the input whose buffer it is (its handle's tensor is the state on replay)
    int in = -1, out = -1, grad = -1;  // slots; grad: a .grad the function left in a buffer of its own
    shape::ShapeTracker in_st, out_st, grad_st;
    int64_t versions = 0;  // version bumps per call
  };
  struct Output {
    int slot = -1;  // -1: a constant, `value`
    UOpRef value;
    shape::ShapeTracker st;
  };
  std::optional<jit::ReplayGraph> graph;
  std::vector<jit::InputLayout> inputs;
  int64_t first_tag = 0;  // scalar input i is the runtime scalar tagged first_tag + i (uop::Param)
  std::vector<State> states;
  std::vector<Output> outputs;

  std::string who() const { return "Jit '" + name + "'"; }
  void check_counts(const std::vector<Tensor> &t, const std::vector<double> &s, const std::vector<double> &b);
  std::vector<Tensor> scalar_tensors(const std::vector<double> &s) const;
  std::vector<Tensor> eager(const std::vector<Tensor> &t, const std::vector<double> &s);
  // The tensors the function gets: each input as given, or, where it is a
  // view into part of a buffer that call 1 did not update, a row-major copy
  // (so a replay can take a view at another offset, a batch sliced out of a
  // dataset).
  std::vector<Tensor> prepare(const std::vector<Tensor> &given);
  // Capture: runs the call recording its kernels and copies, then decides
  // each buffer's role on replay. The steps, in order:
  std::vector<Tensor> capture(const std::vector<Tensor> &given, const std::vector<double> &s);
  struct CaptureRun;
  void record_inputs(CaptureRun &c);
  void run_recorded(CaptureRun &c, const std::vector<Tensor> &given, const JitArgs &args);
  bool find_states(CaptureRun &c);  // false: capture again on the next call (see retried)
  void build_graph(CaptureRun &c);
  std::vector<Tensor> replay(const std::vector<Tensor> &given, const std::vector<double> &s);
  // A replay's updated tensors and where each one's new value goes (null: the out slot's buffer).
  struct StateHomes {
    std::vector<ImplPtr> impls;
    std::vector<BufferPtr> homes;
  };
  StateHomes bind_states(const std::vector<Tensor> &t, std::vector<BufferPtr> &bound);
  void move_states(const StateHomes &h, const std::vector<BufferPtr> &bound);
  void check_outputs(const std::vector<Tensor> &outs) const;
};

void Jit::Impl::check_counts(const std::vector<Tensor> &t, const std::vector<double> &s,
                             const std::vector<double> &b) {
  if (calls > 0) return signature.check(t.size(), s.size(), b, who());
  signature = {t.size(), s.size(), b};
  first_tag = reserve_tags(s.size());
}

// Each scalar input as a 0-d float64 runtime scalar of its own tag: kernels
// read it as a launch argument, which a replay binds to the call's value.
std::vector<Tensor> Jit::Impl::scalar_tensors(const std::vector<double> &s) const {
  std::vector<Tensor> out;
  for (size_t i = 0; i < s.size(); i++)
    out.push_back(make_tensor(uop::param_tensor(s[i], DType::Float64, {}, first_tag + static_cast<int64_t>(i))));
  return out;
}

void Jit::Impl::check_outputs(const std::vector<Tensor> &outs) const {
  for (size_t i = 0; i < outs.size(); i++)
    if (outs[i].requires_grad())
      throw Error(who() + ": output " + std::to_string(i) +
                  " requires grad, but a replay's outputs carry no autograd graph; call backward() inside the "
                  "function and return detached values");
}

std::vector<Tensor> Jit::Impl::eager(const std::vector<Tensor> &t, const std::vector<double> &s) {
  realize_with_updates({});
  std::vector<Tensor> outs = fn(JitArgs{t, scalar_tensors(s)});
  check_outputs(outs);
  realize_all(outs);
  return outs;
}

std::vector<Tensor> Jit::Impl::prepare(const std::vector<Tensor> &given) {
  std::vector<Tensor> out;
  for (size_t i = 0; i < given.size(); i++) {
    const Tensor &x = given[i];
    bufferize(x);
    const bool updated = i < input_updated.size() && input_updated[i];
    const uop::Buffer &buf = *buffer_of(x.uop());
    const bool whole = buf.size == x.numel() && uop::is_buffer_view(x.uop(), buf, x.shape());
    if (!updated && !whole) {
      Tensor copy = make_tensor(row_major(x.uop()));
      copy.realize();
      out.push_back(copy);
    } else {
      out.push_back(x);
    }
  }
  return out;
}

// One capture's working state, from the call to the replay graph.
struct Jit::Impl::CaptureRun {
  std::vector<Tensor> t;  // the tensors the function got (prepare())
  // The buffers of the call's tensors: the inputs as the call gets them (the
  // function may update them), the updated tensors', the outputs'.
  jit::CallBuffers call;
  // The tensors the call updates, with the buffer and layout of their value
  // before the first update (not the value node itself: holding it would make
  // the scheduler copy where it writes in place).
  struct Seen {
    ImplPtr impl;
    BufferPtr in;  // null: the value was not in a buffer
    shape::ShapeTracker in_st;
    int64_t version;
  };
  std::vector<Seen> seen;
  engine::Capture cap;
  std::vector<Tensor> outs;
};

void Jit::Impl::record_inputs(CaptureRun &c) {
  const jit::InputViews in = input_views(c.t);
  inputs = jit::input_layouts(in);
  c.call.inputs = in.buffers;
}

void Jit::Impl::run_recorded(CaptureRun &c, const std::vector<Tensor> &given, const JitArgs &args) {
  std::unordered_map<const TensorImpl *, size_t> seen_at;
  std::optional<size_t> updated_copy;  // an input the function got as a copy, then updated
  UpdateObserver observer = [&](const ImplPtr &target, const UOpRef &before) {
    for (size_t i = 0; i < c.t.size(); i++)
      if (c.t[i].uop() != given[i].uop() && target == TensorImpl::of(c.t[i]) && !updated_copy) updated_copy = i;
    if (!seen_at.emplace(target.get(), c.seen.size()).second) return;
    const bool buffered = root_of(before)->op == Op::Buffer;
    c.seen.push_back({target, buffered ? buffer_of(before) : nullptr, tracker_of(before),
                      target->version ? *target->version - 1 : 0});
  };
  {
    engine::CaptureScope scope(c.cap);
    UpdateObserver *prev = set_update_observer(&observer);
    try {
      std::vector<Tensor> returned = fn(args);
      check_outputs(returned);
      realize_all(returned);
      // New handles, as a replay returns: the function's own may hold an
      // autograd graph (detach() keeps its base) and with it values of the call.
      for (const Tensor &r : returned) c.outs.push_back(Tensor(r.uop()));
    } catch (...) {
      set_update_observer(prev);
      throw;
    }
    set_update_observer(prev);
  }
  if (updated_copy)
    throw Error(who() + ": input " + std::to_string(*updated_copy) +
                " is a view into part of a buffer and the function updates it in place, which it did not on call "
                "1; the capture passed it a copy, so the update was lost. Call reset() (an input updated on call 1 "
                "is passed as itself)");
}

bool Jit::Impl::find_states(CaptureRun &c) {
  states.clear();
  for (CaptureRun::Seen &sn : c.seen) {
    if (!sn.in && !retried) {
      // Its value was not in a buffer when the call began (a constant such as
      // zeros()): it is now, so the next call captures again. (Once: on the
      // retry such a tensor is taken for one the call made itself, and if it
      // is not, the check for kept values in build_graph names it.)
      retried = true;
      calls = 1;
      return false;
    }
    if (!sn.in) continue;
    const BufferPtr &in = sn.in;
    if (in->id >= c.call.first_new) continue;  // made by the call itself
    LOOM_CHECK(direct_buffer_view(sn.impl->uop), "Jit: an updated tensor was not realized");
    State st;
    st.impl = sn.impl;
    st.in_st = sn.in_st;
    st.out_st = tracker_of(sn.impl->uop);
    st.versions = (sn.impl->version ? *sn.impl->version : 0) - sn.version;
    if (auto it = std::find(c.call.inputs.begin(), c.call.inputs.end(), in); it != c.call.inputs.end())
      st.arg = static_cast<int>(it - c.call.inputs.begin());  // the first input on that buffer
    jit::CallBuffers::Update u{in, buffer_of(sn.impl->uop), nullptr};
    const std::shared_ptr<TensorImpl> holder = grad_holder(sn.impl);
    if (holder && direct_buffer_view(holder->grad->uop) && buffer_of(holder->grad->uop)->id >= c.call.first_new) {
      u.grad = buffer_of(holder->grad->uop);
      st.grad_st = tracker_of(holder->grad->uop);
      st.grad_holder = holder;
    }
    states.push_back(st);
    c.call.updates.push_back(std::move(u));
  }
  outputs.assign(c.outs.size(), Output{});
  for (size_t i = 0; i < c.outs.size(); i++) {
    if (root_of(c.outs[i].uop())->op != Op::Buffer) {
      outputs[i].value = c.outs[i].uop();  // a constant
      c.call.outputs.push_back(nullptr);
      continue;
    }
    outputs[i].st = tracker_of(c.outs[i].uop());
    c.call.outputs.push_back(buffer_of(c.outs[i].uop()));
  }
  return true;
}

void Jit::Impl::build_graph(CaptureRun &c) {
  c.seen.clear();  // drops the values before the updates
  jit::Replay r = jit::plan_replay(std::move(c.cap), c.call, who());
  for (size_t i = 0; i < inputs.size(); i++) inputs[i].slot = r.slots.inputs[i];
  for (size_t i = 0; i < states.size(); i++) {
    states[i].in = r.slots.updates[i].in;
    states[i].out = r.slots.updates[i].out;
    states[i].grad = r.slots.updates[i].grad;
  }
  for (size_t i = 0; i < outputs.size(); i++) {
    if (outputs[i].value) continue;
    outputs[i].slot = r.slots.outputs[i];
    // Found realized before the call (a value of constants computed earlier):
    // the same value on every replay.
    if (outputs[i].slot < 0) outputs[i].value = c.outs[i].uop();
  }
  graph.emplace(std::move(r.graph));
}

std::vector<Tensor> Jit::Impl::capture(const std::vector<Tensor> &given, const std::vector<double> &s) {
  realize_with_updates({});  // updates made before the call are not part of it
  CaptureRun c;
  c.t = prepare(given);
  const JitArgs args{c.t, scalar_tensors(s)};
  c.call.first_new = uop::Buffer::next_id();
  record_inputs(c);
  run_recorded(c, given, args);
  jit::check_baked_numbers(first_kernels, jit::kernel_texts(c.cap), who());
  first_kernels.clear();
  if (find_states(c)) build_graph(c);
  return c.outs;
}

std::vector<Tensor> Jit::Impl::replay(const std::vector<Tensor> &given, const std::vector<double> &s) {
  realize_with_updates({});
  const std::vector<Tensor> t = prepare(given);
  std::vector<BufferPtr> bound(graph->slots().size());
  jit::bind_inputs(inputs, input_views(t), [&](size_t i) { return layout_str(t[i]); }, bound, who());
  std::vector<std::pair<int64_t, double>> scalars;
  for (size_t i = 0; i < s.size(); i++) scalars.push_back({first_tag + static_cast<int64_t>(i), s[i]});

  StateHomes homes = bind_states(t, bound);
  graph->replay(bound, who(), scalars);
  move_states(homes, bound);
  std::vector<Tensor> outs;
  for (const Output &o : outputs)
    outs.push_back(o.value ? Tensor(o.value) : Tensor(view_of(bound[static_cast<size_t>(o.slot)], o.st)));
  return outs;
}

// The tensors updated in place, read from their current buffers. Each stays
// in its buffer (so other captures reading it stay valid) unless something
// besides the tensor (a lazy value, a saved tensor) still reads the old value
// there.
Jit::Impl::StateHomes Jit::Impl::bind_states(const std::vector<Tensor> &t, std::vector<BufferPtr> &bound) {
  const jit::ReplayGraph &g = *graph;
  StateHomes h{std::vector<ImplPtr>(states.size()), std::vector<BufferPtr>(states.size())};
  for (size_t i = 0; i < states.size(); i++) {
    const State &st = states[i];
    ImplPtr impl = st.arg >= 0 ? TensorImpl::of(t[static_cast<size_t>(st.arg)]) : st.impl.lock();
    if (impl && st.arg >= 0 && impl->view_base) impl = impl->view_base;
    if (!impl)
      throw Error(who() + ": a tensor the capture updates in place was freed since the capture; call reset() to "
                  "capture again");
    if (!direct_buffer_view(impl->uop) || !(tracker_of(impl->uop) == st.in_st))
      throw Error(who() + ": a tensor the capture updates in place (" + describe(impl->uop) +
                  ") changed its layout since the capture; call reset() to capture again");
    BufferPtr cur = buffer_of(impl->uop);
    const bool exclusive = only_holder(*impl);
    if (st.in == st.out && st.in >= 0) {  // written in place by the capture
      if (!exclusive) {
        BufferPtr copy = uop::Buffer::create(cur->dtype, cur->size);
        engine::copy_buffer(*copy, *cur);
        cur = std::move(copy);
      }
      h.homes[i] = cur;
    } else if (exclusive && st.out >= 0 && st.in_st == st.out_st &&
               g.slots()[static_cast<size_t>(st.out)].size == cur->size) {
      h.homes[i] = cur;  // the capture's copy-on-write result is copied back
    }
    if (st.in >= 0) bound[static_cast<size_t>(st.in)] = cur;
    h.impls[i] = std::move(impl);
  }
  return h;
}

// After a replay: each updated tensor onto its new value (in its home, else
// the out slot's buffer), its views rebased, its version bumped, its .grad set.
void Jit::Impl::move_states(const StateHomes &h, const std::vector<BufferPtr> &bound) {
  for (size_t i = 0; i < states.size(); i++) {
    const State &st = states[i];
    TensorImpl &impl = *h.impls[i];
    const BufferPtr &home = h.homes[i];
    const UOpRef before = impl.uop;
    if (st.out >= 0) {
      const BufferPtr &out = bound[static_cast<size_t>(st.out)];
      if (home && home != out) engine::copy_buffer(*home, *out);
      if (!home || home != buffer_of(before)) impl.uop = view_of(home ? home : out, st.out_st);
    }
    rebase_views(impl, before, impl.uop);
    *impl.version_counter() += st.versions;
    if (const std::shared_ptr<TensorImpl> holder = st.grad_holder.lock(); st.grad >= 0 && holder) {
      Tensor grad(view_of(bound[static_cast<size_t>(st.grad)], st.grad_st));
      if (holder->grad) holder->grad->uop = grad.uop();
      else TensorImpl::wrap(holder).set_grad(grad);
    }
  }
}

Jit::Jit(Fn fn, std::string name) : impl_(std::make_unique<Impl>()) {
  impl_->fn = std::move(fn);
  impl_->name = std::move(name);
}
Jit::~Jit() = default;

std::vector<Tensor> Jit::operator()(const std::vector<Tensor> &tensors, const std::vector<double> &scalars,
                                    const std::vector<double> &baked) {
  Impl &m = *impl_;
  m.check_counts(tensors, scalars, baked);
  if (!jit_enabled()) {
    m.calls++;
    return m.eager(tensors, scalars);
  }
  if (m.graph) {
    m.calls++;
    return m.replay(tensors, scalars);
  }
  if (m.calls == 0) {
    // Call 1 runs eagerly and keeps its kernels' ASTs and which inputs it updated.
    engine::Capture cap;
    std::vector<Tensor> outs;
    m.input_updated.assign(tensors.size(), false);
    tensor::UpdateObserver observer = [&](const ImplPtr &target, const UOpRef &) {
      for (size_t i = 0; i < tensors.size(); i++) {
        const ImplPtr &impl = TensorImpl::of(tensors[i]);
        if (target == impl || target == impl->view_base) m.input_updated[i] = true;
      }
    };
    {
      engine::CaptureScope scope(cap);
      tensor::UpdateObserver *prev = tensor::set_update_observer(&observer);
      try {
        outs = m.eager(tensors, scalars);
      } catch (...) {
        tensor::set_update_observer(prev);
        throw;
      }
      tensor::set_update_observer(prev);
    }
    m.calls++;
    m.first_kernels = jit::kernel_texts(cap);
    return outs;
  }
  std::vector<Tensor> outs = m.capture(tensors, scalars);
  m.calls++;
  return outs;
}

void Jit::reset() {
  impl_->graph.reset();
  impl_->calls = 0;
  impl_->retried = false;
  impl_->first_kernels.clear();
}

Jit::Info Jit::info() const {
  Info i;
  i.calls = impl_->calls;
  i.captured = impl_->graph.has_value();
  if (impl_->graph) {
    i.kernels = static_cast<int64_t>(impl_->graph->kernels());
    i.host_steps = static_cast<int64_t>(impl_->graph->host_steps());
    i.planned_bytes = impl_->graph->planned_bytes();
    i.intermediate_bytes = impl_->graph->intermediate_bytes();
    i.peak_live_bytes = impl_->graph->peak_live_bytes();
  }
  return i;
}

}  // namespace loom
