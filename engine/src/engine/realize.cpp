#include "engine/realize.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "codegen/pipeline.h"
#include "engine/arena.h"
#include "engine/beam.h"
#include "engine/capture.h"
#include "engine/trace.h"
#include "knobs/knobs.h"
#include "renderer/c_renderer.h"
#include "renderer/cuda_renderer.h"
#include "runtime/device.h"
#include "schedule/gemm.h"
#include "schedule/schedule.h"
#include "shape/pool.h"
#include "uop/node_map.h"

namespace loom::engine {

int debug_level() { return knobs::debug(); }

double now_ms() {
  using namespace std::chrono;
  return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

namespace {

std::atomic<int64_t> g_live_buffers{0}, g_live_bytes{0}, g_peak_bytes{0};

// A kernel ready to run: its linearized program (launch size, work) and the
// device program compiled from it.
struct Kernel {
  uop::UOpRef ast;  // keeps the interned key alive
  codegen::KernelSpec program;
  std::shared_ptr<const runtime::Program> compiled;
  uint64_t last_use = 0;
};

// The process-wide kernel cache, keyed by the interned AST: an identical
// kernel in any schedule is compiled once (and found on disk by later
// processes). Each loaded kernel holds a shared object and its memory
// mappings (Linux limits a process's mappings, vm.max_map_count), so at
// most `limit` kernels stay loaded: past it, the least recently used quarter
// is unloaded (a kernel a running schedule holds stays alive until it ends)
// and reloads from disk when it is next needed.
struct KernelCache {
  std::mutex mu;
  std::unordered_map<const uop::UOp *, std::shared_ptr<Kernel>> map;
  size_t limit = 2048;
  uint64_t clock = 0;  // ticks once per lookup; Kernel::last_use is the tick of its latest
};
KernelCache &kernel_cache() {
  static auto *c = new KernelCache();
  return *c;
}

std::atomic<bool> g_extern{knobs::extern_gemm()};
std::atomic<bool> g_graphs{knobs::graphs()};
std::atomic<bool> g_followed{false};  // the GEMM split's rules set from the device (follow_device)

// A canonical GEMM (schedule/gemm_shape.h) without an epilogue runs on the
// device's extern GEMM when there is one for it and LOOM_EXTERN is not 0:
// that program, else null.
std::shared_ptr<const runtime::Program> extern_program(const schedule::ScheduleItem &item) {
  if (!g_extern.load()) return nullptr;
  return item.gemm && !item.gemm->epilogue ? runtime::default_device().extern_gemm(*item.gemm) : nullptr;
}

// A kernel ready to run: the extern program where there is one, every other
// kernel generated code.
std::shared_ptr<Kernel> build_kernel(const schedule::ScheduleItem &item) {
  auto k = std::make_shared<Kernel>();
  k->ast = item.ast;
  runtime::Device &dev = runtime::default_device();
  k->compiled = extern_program(item);
  const std::optional<codegen::Upcast> up = k->compiled || !dev.target().beam ? std::nullopt : beam_upcast(item);
  trace::PassCapture passes;
  k->program = codegen::kernel_spec(item, up ? &*up : nullptr, dev.target());
  if (trace::on()) trace::kernel_lowered(item.ast, item.name, passes.take(), k->compiled ? k->compiled->library() : nullptr);
  return k;
}

// Past the limit, unloads the least recently used kernels down to 3/4 of it,
// never one used after tick `before` (the schedule being run).
void evict_least_recent(KernelCache &cache, uint64_t before) {
  if (cache.map.size() <= cache.limit) return;
  std::vector<std::pair<uint64_t, const uop::UOp *>> uses;
  for (auto &[key, k] : cache.map)
    if (k->last_use <= before) uses.push_back({k->last_use, key});
  const size_t excess = cache.map.size() - cache.limit * 3 / 4, n = std::min(excess, uses.size());
  std::nth_element(uses.begin(), uses.begin() + static_cast<std::ptrdiff_t>(n), uses.end());
  for (size_t i = 0; i < n; ++i) cache.map.erase(uses[i].second);
}

// Gives the kernels (none has a program yet) their programs, compiled in one
// Device::compile call (the device compiles the misses together); returns how
// many the compiler built. LOOM_DEBUG=3 prints each kernel's source.
int64_t compile_kernels(const std::vector<std::shared_ptr<Kernel>> &kernels) {
  std::vector<runtime::KernelSource> sources;
  const bool tracing = trace::on();
  for (auto &k : kernels) {
    sources.push_back(runtime::default_device().source(k->program));
    if (debug_level() >= 3) std::cerr << sources.back().source.substr(sources.back().body);
    if (tracing) trace::kernel_source(k->ast, sources.back().source.substr(sources.back().body));
  }
  runtime::CompileStats cs;
  const double t0 = now_ms();
  const std::vector<std::shared_ptr<const runtime::Program>> progs = runtime::default_device().compile(sources, cs);
  if (tracing) trace::compiled(t0, now_ms() - t0, cs.compiled, static_cast<int64_t>(kernels.size()));
  for (size_t i = 0; i < kernels.size(); ++i) kernels[i]->compiled = progs[i];
  stats().kernels_compiled += cs.compiled;
  stats().cache_healed += cs.cache_healed;
  return cs.compiled;
}

// The kernels of a schedule, from the cache or compiled now (misses in parallel).
std::vector<std::shared_ptr<Kernel>> get_kernels(const schedule::Schedule &sched) {
  auto &cache = kernel_cache();
  std::lock_guard<std::mutex> lock(cache.mu);
  std::vector<std::shared_ptr<Kernel>> out;
  std::vector<std::shared_ptr<Kernel>> fresh;
  for (auto &item : sched.items) {
    auto &slot = cache.map[item.ast.get()];
    if (!slot) {
      slot = build_kernel(item);
      if (!slot->compiled) fresh.push_back(slot);  // an extern kernel has its program already
    }
    slot->last_use = ++cache.clock;
    out.push_back(slot);
  }
  if (!fresh.empty()) {
    try {
      compile_kernels(fresh);
    } catch (...) {
      for (auto &k : fresh) cache.map.erase(k->ast.get());
      throw;
    }
  }
  evict_least_recent(cache, cache.clock - sched.items.size());
  return out;
}

// Compile-ahead (compile_ahead below): while this thread rehearses, realize
// gathers the kernels it would compile here, and compile_ahead compiles them
// together afterwards.
thread_local bool t_rehearsing = false;
struct Rehearsal {
  std::unordered_map<const uop::UOp *, std::shared_ptr<Kernel>> kernels;  // by AST, in no cache yet
  std::vector<std::shared_ptr<Kernel>> order;
};
thread_local Rehearsal t_rehearsal;

void gather_kernels(const schedule::Schedule &sched) {
  auto &cache = kernel_cache();
  std::lock_guard<std::mutex> lock(cache.mu);
  for (auto &item : sched.items) {
    if (cache.map.count(item.ast.get()) || t_rehearsal.kernels.count(item.ast.get())) continue;
    std::shared_ptr<Kernel> k = build_kernel(item);
    t_rehearsal.kernels[item.ast.get()] = k;
    if (!k->compiled) t_rehearsal.order.push_back(k);
  }
}

void ensure_allocated(uop::Buffer &b) {
  if (b.allocated()) return;
  b.mem = allocate_tracked(static_cast<size_t>(b.size) * itemsize(b.dtype));
  stats().buffers_allocated++;
}

}  // namespace

RunStats &stats() {
  static RunStats s;
  return s;
}

size_t cached_kernels() {
  std::lock_guard<std::mutex> l(kernel_cache().mu);
  return kernel_cache().map.size();
}
void clear_kernel_cache() {
  std::lock_guard<std::mutex> l(kernel_cache().mu);
  kernel_cache().map.clear();
}

bool set_extern_gemm(bool on) {
  g_followed = true;
  runtime::Device &dev = runtime::default_device();
  // Libraries and the packed template read either orientation alike.
  schedule::set_gemm_packs_transposed(on || dev.target().packed_gemm);
  // The templates that gather: the C target's of float32, the CUDA target's
  // of halves (beside a library, where it takes convolutions: cuDNN).
  const codegen::Target &t = dev.target();
  using schedule::Gathers;
  schedule::set_gemm_gathers(t.packed_gemm    ? schedule::GatherRule{on ? Gathers::FewRows : Gathers::All, false}
                             : t.tensor_cores ? schedule::GatherRule{on && !dev.extern_convs() ? Gathers::Off : Gathers::All,
                                                                     true, on}
                                              : schedule::GatherRule{});
  auto &cache = kernel_cache();
  std::lock_guard<std::mutex> l(cache.mu);
  const bool was = g_extern.exchange(on);
  if (was != on) cache.map.clear();
  return was;
}
bool extern_gemm() { return g_extern.load(); }
void follow_device() {
  if (!g_followed.load()) set_extern_gemm(g_extern.load());
}
bool set_launch_graphs(bool on) { return g_graphs.exchange(on); }
bool launch_graphs() { return g_graphs.load(); }
void synchronize() { runtime::default_device().synchronize(); }

int64_t compile_ahead(const std::function<void()> &rehearsal) {
  if (t_rehearsing) throw Error("compile_ahead: already rehearsing (compile_ahead does not nest)");
  t_rehearsing = true;
  try {
    rehearsal();
  } catch (...) {  // a rehearsal's errors are the real run's to report
  }
  t_rehearsing = false;
  Rehearsal gathered = std::exchange(t_rehearsal, {});
  int64_t compiled = 0;
  try {
    compiled = compile_kernels(gathered.order);
  } catch (const std::exception &) {  // the real run compiles each kernel again and reports the failure
    return 0;
  }
  auto &cache = kernel_cache();
  std::lock_guard<std::mutex> lock(cache.mu);
  const uint64_t before = cache.clock;
  for (auto &[ast, k] : gathered.kernels)
    if (k->compiled && !cache.map.count(ast)) {
      k->last_use = ++cache.clock;
      cache.map[ast] = k;
    }
  evict_least_recent(cache, before);
  return compiled;
}

size_t set_kernel_cache_limit(size_t limit) {
  std::lock_guard<std::mutex> l(kernel_cache().mu);
  return std::exchange(kernel_cache().limit, std::max<size_t>(1, limit));
}

MemoryStats memory_stats() { return {g_live_buffers.load(), g_live_bytes.load(), g_peak_bytes.load()}; }
void reset_peak_memory() { g_peak_bytes = g_live_bytes.load(); }

std::shared_ptr<void> allocate_tracked(size_t bytes) {
  std::shared_ptr<void> mem = runtime::default_device().allocate(bytes);
  g_live_buffers++;
  const int64_t live = g_live_bytes += static_cast<int64_t>(bytes);
  for (int64_t peak = g_peak_bytes.load(); live > peak && !g_peak_bytes.compare_exchange_weak(peak, live);) {
  }
  // The count drops when the last owner of the memory lets go.
  return std::shared_ptr<void>(
      mem.get(),
      [mem, bytes](void *) mutable {
        g_live_buffers--;
        g_live_bytes -= static_cast<int64_t>(bytes);
        mem.reset();
      },
      shape::PoolAlloc<char>());  // the count's block from the graph's pool, not malloc
}

void *buffer_data(uop::Buffer &buf) {
  ensure_allocated(buf);
  return buf.data();
}

const char *device_name() { return runtime::default_device().name(); }
std::string device_missing(const std::string &name) { return runtime::device_missing(name); }

std::vector<std::string> cache_files(const std::vector<uop::UOpRef> &outputs) {
  std::vector<std::string> out;
  runtime::Device &dev = runtime::default_device();
  for (auto &item : schedule::create_schedule(outputs).items)
    out.push_back(dev.cache_file(dev.source(codegen::kernel_spec(item, nullptr, dev.target()))));
  return out;
}

namespace {
std::string bound_str(const schedule::ScheduleItem &item) {
  std::string s;
  for (size_t k = 0; k < item.vars.size(); k++) {
    const uop::UOpRef &v = item.vars[k];
    s += (s.empty() ? "v" : " v") + std::to_string(k) + "=" + uop::arg_str(uop::Arg{v->const_value()}) + " " +
         dtype_name(v->dtype);
  }
  for (size_t i = 0; i < item.shifts.size(); i++)
    if (item.shifts[i]) s += (s.empty() ? "data" : " data") + std::to_string(i) + "+" + std::to_string(item.shifts[i]);
  return s;
}
}  // namespace

std::vector<RenderedKernel> render(const std::vector<uop::UOpRef> &outputs) {
  follow_device();
  std::vector<RenderedKernel> out;
  for (auto &item : schedule::create_schedule(outputs).items) {
    const codegen::KernelSpec p = codegen::kernel_spec(item);
    const renderer::CudaKernel cuda = renderer::render_cuda(codegen::kernel_spec(item, nullptr, renderer::cuda_target()));
    RenderedKernel k{item.name, item.ast->str(), codegen::program_str(p), renderer::render_c(p), cuda.source,
                     bound_str(item), cuda.blocks, cuda.threads, {}, ""};
    for (auto &b : item.bufs)
      k.buffers.push_back("buf" + std::to_string(b->id) + "[" + std::to_string(b->size) + "] " + dtype_name(b->dtype));
    if (const auto lib = extern_program(item); lib && lib->library()) k.library = lib->library();
    out.push_back(std::move(k));
  }
  return out;
}

namespace {

// `sched`'s items as ExecItems: a const schedule's buffers, shifts and names
// copied, a mutable one's moved.
template <typename Sched>
std::vector<ExecItem> build_exec_items(Sched &sched) {
  std::vector<ExecItem> out;
  out.reserve(sched.items.size());
  const std::vector<std::shared_ptr<Kernel>> kernels = get_kernels(sched);
  for (size_t i = 0; i < sched.items.size(); i++) {
    auto &item = sched.items[i];
    auto take = [](auto &field) -> decltype(auto) {
      if constexpr (std::is_const_v<Sched>) return (field);
      else return std::move(field);
    };
    const codegen::KernelSpec &prog = kernels[i]->program;
    ExecItem &e = out.emplace_back();
    e.name = take(item.name);
    e.ast = item.ast;
    e.program = kernels[i]->compiled;
    e.bufs = take(item.bufs);
    e.shifts = take(item.shifts);
    e.vars.reserve(prog.vars.size());
    e.params.reserve(prog.vars.size());
    for (const uop::UOpRef &v : prog.vars) {
      const uop::UOpRef &bound = item.vars.at(static_cast<size_t>(v->arg_as<int64_t>()));
      e.vars.push_back(uop::param_bits(v->dtype, bound->arg_as<uop::Param>()));
      e.params.push_back(bound);
    }
    e.global_size = launch_global_size(prog);
    e.parallel = launch_parallel(prog);
    e.work = prog.work;
  }
  uop::NodeMap<size_t> last_use;  // buffer -> the last item that reads or writes it
  last_use.reserve(out.size() * 3);
  for (size_t i = 0; i < out.size(); i++)
    for (auto &b : out[i].bufs) last_use[b.get()] = i;
  for (auto &b : sched.transient)
    if (const size_t *i = last_use.find(b.get())) out[*i].release.push_back(b);
  return out;
}

}  // namespace

std::vector<ExecItem> exec_items(const schedule::Schedule &sched) { return build_exec_items(sched); }
std::vector<ExecItem> exec_items_taking(schedule::Schedule &sched) { return build_exec_items(sched); }

namespace {

// Every launch's argument pointers, gathered before the first launch: item
// i's are [first[i], first[i + 1]), its buffers' data (null for a buffer
// allocated at its first use) and then its runtime scalars' addresses. Read
// between launches, each buffer cost a cache miss (the kernel before had
// evicted it); gathered in one pass, the misses overlap.
struct LaunchArgs {
  std::vector<void *> ptrs;
  std::vector<size_t> first;
};
// Buffer i of `e` (allocated) as its kernel reads it: its data moved by the
// item's pointer shift (schedule/offsets.h).
void *buffer_pointer(const ExecItem &e, size_t i) {
  const uop::Buffer &b = *e.bufs[i];
  const int64_t shift = i < e.shifts.size() ? e.shifts[i] : 0;
  return static_cast<char *>(b.data()) + shift * static_cast<int64_t>(itemsize(b.dtype));
}
LaunchArgs launch_args(const std::vector<ExecItem> &items) {
  LaunchArgs a;
  a.first.reserve(items.size() + 1);
  size_t n = 0;
  for (const ExecItem &e : items) n += e.bufs.size() + e.vars.size();
  a.ptrs.reserve(n);
  for (const ExecItem &e : items) {
    a.first.push_back(a.ptrs.size());
    for (size_t i = 0; i < e.bufs.size(); i++)
      a.ptrs.push_back(e.bufs[i]->allocated() ? buffer_pointer(e, i) : nullptr);
    for (const uint64_t &v : e.vars) a.ptrs.push_back(const_cast<uint64_t *>(&v));
    e.bufs[0]->host_copy.reset();  // every kernel writes its first buffer, and only that one
  }
  a.first.push_back(a.ptrs.size());
  return a;
}

int64_t buffer_bytes(const ExecItem &e) {
  int64_t bytes = 0;
  for (auto &b : e.bufs) bytes += b->size * static_cast<int64_t>(itemsize(b->dtype));
  return bytes;
}

// Submits what `graph` holds and counts it, its time as launches' time.
void flush_graph(runtime::LaunchGraph &graph) {
  const double t0 = now_ms();
  const runtime::GraphCounts c = graph.flush();
  stats().kernel_seconds += (now_ms() - t0) * 1e-3;
  stats().graphs_built += c.built;
  stats().graph_launches += c.launched;
  stats().graph_node_updates += c.updated;
}

}  // namespace

int64_t run(const std::vector<ExecItem> &items, runtime::LaunchGraph *graph) {
  const Placement placement = place_transients(items);
  LaunchArgs args = launch_args(items);
  size_t next_other = 0;
  int64_t work = 0;
  const bool tracing = trace::on();
  const int debug = debug_level();
  if (debug >= 2 || tracing) graph = nullptr;
  // Under a graph, nothing runs before its flush: what the launches read
  // is released after that.
  std::vector<uop::Buffer *> release_after;
  auto release = [&](uop::Buffer *b) {
    if (graph) {
      release_after.push_back(b);
    } else {
      b->mem.reset();
    }
  };
  for (size_t k = 0; k < items.size(); k++) {
    const ExecItem &e = items[k];
    void **ptrs = args.ptrs.data() + args.first[k];
    for (size_t i = 0; i < e.bufs.size(); i++)
      if (!ptrs[i]) {  // first used here: allocated now
        ensure_allocated(*e.bufs[i]);
        ptrs[i] = buffer_pointer(e, i);
      }
    // Per-kernel times (LOOM_DEBUG=2) wait for each kernel; otherwise a GPU's
    // launches queue and kernel_seconds counts only their issue.
    double ms = 0;
    const double k0 = now_ms();
    if (debug >= 2 || tracing) {
      ms = runtime::default_device().timed_launch(*e.program, ptrs, e.global_size, e.parallel);
    } else if (graph && graph->add(*e.program, ptrs, e.global_size)) {
      ms = now_ms() - k0;
    } else {
      if (graph) flush_graph(*graph);
      e.program->launch(ptrs, e.global_size, e.parallel);
      ms = now_ms() - k0;
    }
    if (tracing) trace::launched(e, k0, ms, g_live_bytes.load());
    stats().kernel_seconds += ms * 1e-3;
    stats().kernels_run++;
    if (!placement.placed.empty() && k == placement.last)
      for (uop::Buffer *b : placement.placed) release(b);
    for (; next_other < placement.others.size() && placement.others[next_other].first == k; next_other++)
      release(placement.others[next_other].second);
    record_launch(e);
    work += e.work;
    if (debug >= 2)
      std::fprintf(stderr, "  kernel %-28s global=%-8lld %9.3f ms %8.3f GFLOP/s %8.3f GB/s  work %lld%s%s\n",
                   e.name.c_str(), static_cast<long long>(e.global_size), ms,
                   static_cast<double>(e.work) / (ms * 1e6 + 1e-12), buffer_bytes(e) / (ms * 1e6 + 1e-12),
                   static_cast<long long>(e.work), e.program->library() ? "  extern " : "",
                   e.program->library() ? (std::string(e.program->library()) + " " + e.program->describe(ptrs)).c_str() : "");
  }
  if (graph) flush_graph(*graph);
  for (uop::Buffer *b : release_after) b->mem.reset();
  stats().work += work;
  return work;
}

namespace {

// A rehearsal's realize: the kernels gathered, none run; the buffers they
// would write that outlive the schedule hold zeros, so what the host reads
// back is harmless (no huge shape, no index out of range).
void rehearse(const schedule::Schedule &sched) {
  gather_kernels(sched);
  uop::NodeMap<bool> transient;
  for (auto &b : sched.transient) transient[b.get()] = true;
  for (const schedule::ScheduleItem &item : sched.items)
    for (auto &b : item.bufs)
      if (!b->allocated() && !transient.contains(b.get())) {
        ensure_allocated(*b);
        const std::vector<char> zeros(static_cast<size_t>(b->size) * itemsize(b->dtype));
        if (!zeros.empty()) runtime::default_device().copy_in(b->data(), zeros.data(), zeros.size());
      }
}

}  // namespace

std::vector<uop::UOpRef> realize(const std::vector<uop::UOpRef> &outputs) {
  follow_device();
  const double t0 = now_ms();
  const bool tracing = trace::on() && !t_rehearsing;  // first: LOOM_VIZ starts recording here
  schedule::Schedule sched = schedule::create_schedule(outputs);
  if (t_rehearsing) {
    rehearse(sched);
    schedule::commit(sched);
    return sched.results;
  }
  stats().schedules++;
  stats().schedule_hits += sched.cached;
  stats().donation_checks += sched.donations_checked;
  stats().work_needed += sched.work_needed;
  if (tracing && !sched.items.empty()) trace::realize_begun(t0);
  const int64_t compiled_before = stats().kernels_compiled;
  const int64_t work = sched.items.empty() ? 0 : run(exec_items_taking(sched));
  if (tracing && !sched.items.empty()) trace::realize_ended(sched, now_ms(), work, stats().kernels_compiled - compiled_before);
  schedule::commit(sched);
  stats().realize_seconds += (now_ms() - t0) * 1e-3;
  if (debug_level() >= 1 && !sched.items.empty())
    std::fprintf(stderr, "realize: %zu kernel%s, work %lld (graph needs %lld), schedule cache %s, %.3f ms\n",
                 sched.items.size(), sched.items.size() == 1 ? "" : "s", static_cast<long long>(work),
                 static_cast<long long>(sched.work_needed), sched.cached ? "hit" : "miss", now_ms() - t0);
  return sched.results;
}

}  // namespace loom::engine
