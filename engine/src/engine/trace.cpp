#include "engine/trace.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include "knobs/knobs.h"
#include "loom/error.h"
#include "loom/viz.h"
#include "schedule/explain.h"
#include "schedule/schedule_cache.h"

namespace loom::engine::trace {

namespace {

struct KernelRec {
  uop::UOpRef ast;  // keeps the key alive
  std::string name, source, library;
  codegen::PassLog passes;
};

struct RealizeRec {
  double start = 0, end = 0;
  int graph = -1;  // into Trace::graphs, -1 when the cut was not explained
  bool cached = false;
  int64_t kernels = 0, compiled = 0, work = 0, work_needed = 0;
};

struct LaunchRec {
  int realize, kernel;
  double start, ms;
  int64_t live_bytes;
};

struct CompileRec {
  double start, ms;
  int64_t compiled, kernels;
};

// Past these, records are counted, not kept: a long run's trace stays a few
// tens of megabytes.
constexpr size_t kMaxLaunches = 200000, kMaxRealizes = 20000;

struct Trace {
  std::mutex mu;
  std::atomic<bool> on{false};
  double origin = 0;
  std::vector<std::shared_ptr<const schedule::Explanation>> graphs;
  std::unordered_map<const schedule::Explanation *, int> graph_id;
  std::vector<KernelRec> kernels;
  std::unordered_map<const uop::UOp *, int> kernel_id;
  std::vector<RealizeRec> realizes;
  std::vector<LaunchRec> launches;
  std::vector<CompileRec> compiles;
  int current = -1;  // the realize running on the recording thread, or -1
  int64_t dropped_launches = 0, dropped_realizes = 0;
};

Trace &state() {
  static auto *t = new Trace();
  return *t;
}

int kernel_of(Trace &t, const uop::UOpRef &ast, const std::string &name) {
  auto [it, fresh] = t.kernel_id.try_emplace(ast.get(), static_cast<int>(t.kernels.size()));
  if (fresh) t.kernels.push_back({ast, name, "", "", {}});
  return it->second;
}

std::string env_path() { return knobs::viz(); }

// LOOM_VIZ: recording from the first realize, the trace saved at exit.
bool started_from_env() {
  static const bool started = [] {
    const std::string path = env_path();
    if (path.empty()) return false;
    viz::start();
    static std::string at_exit_path;
    at_exit_path = path;
    std::atexit([] {
      try {
        viz::save(at_exit_path);
        std::fprintf(stderr, "loom: LOOM_VIZ trace written to %s (view: python3 -m loom.viz %s)\n",
                     at_exit_path.c_str(), at_exit_path.c_str());
      } catch (const std::exception &err) {
        std::fprintf(stderr, "loom: LOOM_VIZ trace not written: %s\n", err.what());
      }
    });
    return true;
  }();
  return started;
}

// JSON text: put() writes one value; an Object writes its fields, each a put().
void put(std::string &o, const std::string &s) {
  o += '"';
  for (const unsigned char c : s) {
    if (c == '"' || c == '\\') {
      o += '\\';
      o += static_cast<char>(c);
    } else if (c == '\n') {
      o += "\\n";
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      o += buf;
    } else {
      o += static_cast<char>(c);
    }
  }
  o += '"';
}
void put(std::string &o, const char *s) { put(o, std::string(s)); }
void put(std::string &o, bool v) { o += v ? "true" : "false"; }
void put(std::string &o, int v) { o += std::to_string(v); }
void put(std::string &o, int64_t v) { o += std::to_string(v); }
void put(std::string &o, double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4f", v);
  o += buf;
}
// The records' writers, declared before the templates that call them (their
// types are in other namespaces, so argument-dependent lookup alone would
// not find these).
struct Dropped {
  int64_t launches, realizes;
};
void put(std::string &o, const schedule::ExplainedNode &n);
void put(std::string &o, const schedule::ExplainedGroup &g);
void put(std::string &o, const schedule::ExplainedPass &p);
void put(std::string &o, const std::shared_ptr<const schedule::Explanation> &g);
void put(std::string &o, const codegen::PassRecord &p);
void put(std::string &o, const KernelRec &k);
void put(std::string &o, const RealizeRec &r);
void put(std::string &o, const Dropped &d);
void put(std::string &o, const LaunchRec &l);
void put(std::string &o, const CompileRec &c);
template <typename A, typename B>
void put(std::string &o, const std::pair<A, B> &p);

template <typename T>
void put(std::string &o, const std::vector<T> &v) {
  o += '[';
  for (size_t i = 0; i < v.size(); i++) {
    if (i) o += ',';
    put(o, v[i]);
  }
  o += ']';
}
template <typename... T>
void put_row(std::string &o, const T &...v) {
  o += '[';
  bool first = true;
  ((o += first ? "" : ",", first = false, put(o, v)), ...);
  o += ']';
}
template <typename A, typename B>
void put(std::string &o, const std::pair<A, B> &p) {
  put_row(o, p.first, p.second);
}

class Object {
 public:
  explicit Object(std::string &o) : o_(o) { o_ += '{'; }
  ~Object() { o_ += '}'; }
  template <typename T>
  Object &operator()(const char *key, const T &value) {
    o_ += first_ ? "\"" : ",\"";
    first_ = false;
    o_ += key;
    o_ += "\":";
    put(o_, value);
    return *this;
  }

 private:
  std::string &o_;
  bool first_ = true;
};

void put(std::string &o, const schedule::ExplainedNode &n) {
  Object{o}("op", n.op)("dtype", n.dtype)("arg", n.arg)("shape", n.shape)("src", n.src)("why", n.why)(
      "groups", n.groups);
}
void put(std::string &o, const schedule::ExplainedGroup &g) { Object{o}("node", g.node)("kernels", g.kernels); }
void put(std::string &o, const schedule::ExplainedPass &p) { Object{o}("pass", p.pass)("kernels", p.kernels); }
void put(std::string &o, const std::shared_ptr<const schedule::Explanation> &g) {
  Object{o}("nodes", g->nodes)("groups", g->groups)("passes", g->passes);
}
void put(std::string &o, const codegen::PassRecord &p) {
  Object{o}("pass", p.pass)("text", p.text)("changed", p.changed)("rules", p.rules);
}
void put(std::string &o, const KernelRec &k) {
  Object{o}("name", k.name)("library", k.library)("source", k.source)("passes", k.passes);
}
void put(std::string &o, const RealizeRec &r) {
  Object{o}("start", r.start)("end", r.end)("graph", r.graph)("cached", r.cached)("kernels", r.kernels)(
      "compiled", r.compiled)("work", r.work)("work_needed", r.work_needed);
}
void put(std::string &o, const Dropped &d) { Object{o}("launches", d.launches)("realizes", d.realizes); }
// Launches and compiles are rows of numbers: a run has many.
void put(std::string &o, const LaunchRec &l) { put_row(o, l.realize, l.kernel, l.start, l.ms, l.live_bytes); }
void put(std::string &o, const CompileRec &c) { put_row(o, c.start, c.ms, c.compiled, c.kernels); }

}  // namespace

bool on() { return started_from_env() || state().on.load(std::memory_order_relaxed); }

void kernel_lowered(const uop::UOpRef &ast, const std::string &name, codegen::PassLog passes, const char *library) {
  Trace &t = state();
  std::lock_guard<std::mutex> l(t.mu);
  KernelRec &k = t.kernels[static_cast<size_t>(kernel_of(t, ast, name))];
  k.passes = std::move(passes);
  if (library) k.library = library;
}

void kernel_source(const uop::UOpRef &ast, const std::string &source) {
  Trace &t = state();
  std::lock_guard<std::mutex> l(t.mu);
  t.kernels[static_cast<size_t>(kernel_of(t, ast, ""))].source = source;
}

void compiled(double start_ms, double ms, int64_t compiled, int64_t kernels) {
  Trace &t = state();
  std::lock_guard<std::mutex> l(t.mu);
  t.compiles.push_back({start_ms - t.origin, ms, compiled, kernels});
}

void realize_begun(double start_ms) {
  Trace &t = state();
  std::lock_guard<std::mutex> l(t.mu);
  if (t.realizes.size() >= kMaxRealizes) {
    t.dropped_realizes++;
    t.current = -1;
    return;
  }
  t.current = static_cast<int>(t.realizes.size());
  t.realizes.push_back({start_ms - t.origin, start_ms - t.origin});
}

void realize_ended(const schedule::Schedule &sched, double end_ms, int64_t work, int64_t compiled) {
  Trace &t = state();
  std::lock_guard<std::mutex> l(t.mu);
  if (t.current < 0) return;
  RealizeRec &r = t.realizes[static_cast<size_t>(t.current)];
  t.current = -1;
  r.end = end_ms - t.origin;
  r.cached = sched.cached;
  r.kernels = static_cast<int64_t>(sched.items.size());
  r.compiled = compiled;
  r.work = work;
  r.work_needed = sched.work_needed;
  if (const schedule::Explanation *g = sched.explanation.get()) {
    auto [it, fresh] = t.graph_id.try_emplace(g, static_cast<int>(t.graphs.size()));
    if (fresh) t.graphs.push_back(sched.explanation);
    r.graph = it->second;
  }
}

void launched(const ExecItem &e, double start_ms, double ms, int64_t live_bytes) {
  Trace &t = state();
  std::lock_guard<std::mutex> l(t.mu);
  if (t.launches.size() >= kMaxLaunches) {
    t.dropped_launches++;
    return;
  }
  t.launches.push_back({t.current, kernel_of(t, e.ast, e.name), start_ms - t.origin, ms, live_bytes});
}

PassCapture::PassCapture() : on_(on()) {
  if (on_) codegen::set_pass_log(&log_);
}
PassCapture::~PassCapture() {
  if (on_) codegen::set_pass_log(nullptr);
}
codegen::PassLog PassCapture::take() { return std::exchange(log_, {}); }

}  // namespace loom::engine::trace

namespace loom::viz {

void start() {
  using namespace engine::trace;
  Trace &t = state();
  {
    std::lock_guard<std::mutex> l(t.mu);
    t.graphs.clear();
    t.graph_id.clear();
    t.kernels.clear();
    t.kernel_id.clear();
    t.realizes.clear();
    t.launches.clear();
    t.compiles.clear();
    t.current = -1;
    t.dropped_launches = t.dropped_realizes = 0;
    t.origin = engine::now_ms();
    t.on = true;
  }
  schedule::set_explaining(true);
  // Graphs cut and kernels lowered before now would have no explanation and
  // no passes in the trace: they are cut and lowered again when next used
  // (kernels load from the disk cache, not compiled again).
  schedule::clear_schedule_cache();
  engine::clear_kernel_cache();
}

void stop() {
  engine::trace::state().on = false;
  schedule::set_explaining(false);
}

bool recording() { return engine::trace::on(); }

std::string trace_json() {
  using namespace engine::trace;
  Trace &t = state();
  std::lock_guard<std::mutex> l(t.mu);
  std::string o;
  Object{o}("version", 1)("device", engine::device_name())("peak_bytes", engine::memory_stats().peak_bytes)(
      "graphs", t.graphs)("kernels", t.kernels)("realizes", t.realizes)("launches", t.launches)(
      "compiles", t.compiles)("dropped", Dropped{t.dropped_launches, t.dropped_realizes});
  o += '\n';
  return o;
}

void save(const std::string &path) {
  const std::string json = trace_json();
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) throw Error("loom.viz: cannot write the trace to " + path);
    f << json;
    if (!f.flush()) throw Error("loom.viz: writing the trace to " + path + " failed");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw Error("loom.viz: cannot move the trace into place at " + path);
  }
}

}  // namespace loom::viz
