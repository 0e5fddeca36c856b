#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <optional>
#include <thread>
#include <unordered_set>

#include "loom/error.h"
#include "renderer/c_renderer.h"
#include "runtime/cpu/blas.h"
#include "runtime/cpu/buffer_pool.h"
#include "runtime/cpu/cpu.h"
#include "runtime/disk_cache.h"

namespace loom::runtime::cpu {

namespace {

using KernelFn = void (*)(void **bufs, int64_t start, int64_t end);

// The flags the C renderer's source needs (renderer/c_renderer.h), to build a
// shared object. Kernels compile in batches (one translation unit each, see
// build()); the inliner's limits on a unit's growth are lifted so that every
// function compiles as it would alone, whatever else shares its unit.
const std::vector<std::string> &flags() {
  static const std::vector<std::string> f = [] {
    std::vector<std::string> v = renderer::c_flags();
    v.insert(v.end(), {"-fPIC", "-shared", "-pipe", "--param=large-unit-insns=1000000000",
                       "--param=inline-unit-growth=1000000000", "--param=large-function-growth=1000000000"});
    return v;
  }();
  return f;
}
const char *kCompiler = "cc";
// At most this many kernels share a translation unit: compiled alone, a
// kernel cost ~146 ms of CPU (driver, cc1 start-up and the prelude, as, ld),
// in a unit ~55-120 ms (its own code generation); a process loading any one
// kernel of a unit reads the unit's whole object.
constexpr size_t kBatchKernels = 48;

// The compiler's identity (version and target), part of every cache key.
const std::string &compiler_identity() {
  static const std::string id = [] {
    ProcessResult r = run_process({kCompiler, "-dumpfullversion", "-dumpmachine"});
    if (r.status != 0) throw Error(std::string("cannot run the C compiler '") + kCompiler + "': " + r.output);
    return r.output;
  }();
  return id;
}

class CpuProgram : public Program {
 public:
  CpuProgram(void *handle, KernelFn fn) : handle_(handle), fn_(fn) {}
  ~CpuProgram() override { dlclose(handle_); }
  void launch(void **bufs, int64_t global_size, bool parallel) const override {
    const int threads = pool_threads();
    if (!parallel || global_size < 2 || threads < 2) {
      fn_(bufs, 0, global_size);
      return;
    }
    const int64_t n = std::min<int64_t>(threads, global_size);
    parallel_run(static_cast<int>(n), [&](int i) { fn_(bufs, global_size * i / n, global_size * (i + 1) / n); });
  }

 private:
  void *handle_;
  KernelFn fn_;
};

// A kernel's cache entry. Its function is renamed to `symbol()` (derived from
// the key), so kernels of the same name can share a translation unit.
struct Entry {
  std::string key, path, name, source;
  size_t body = 0;  // where the kernel's own text starts (after the prelude)
  std::string symbol() const { return "loom_" + key; }
};

// Loads a cached kernel; nullptr when there is none, or when the entry is
// unusable (then it is deleted and *healed set). Each cache file is the shared
// object followed by the cache trailer (runtime/disk_cache.h), checked before
// dlopen.
std::shared_ptr<const Program> load(const Entry &e, bool *healed) {
  if (!std::filesystem::exists(e.path)) return nullptr;
  if (read_cache_object(e.path, e.key)) {
    if (void *h = dlopen(e.path.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      if (auto fn = reinterpret_cast<KernelFn>(dlsym(h, e.symbol().c_str()))) return std::make_shared<CpuProgram>(h, fn);
      dlclose(h);
    }
  }
  std::error_code ec;
  std::filesystem::remove(e.path, ec);  // corrupt, truncated or foreign: rebuild it
  *healed = true;
  return nullptr;
}

// One translation unit for the batch: the prelude once (every CPU kernel's
// source starts with the same one), then each kernel's text with its function
// renamed to its symbol.
std::string batch_source(const std::vector<const Entry *> &batch) {
  std::string src = batch[0]->source.substr(0, batch[0]->body);
  for (const Entry *e : batch)
    src += "#define " + e->name + " " + e->symbol() + "\n" + e->source.substr(e->body) + "\n#undef " + e->name + "\n";
  return src;
}

// Compiles the batch into one shared object, published under each kernel's
// cache path (hard links to one file whose trailer names every kernel).
void build(const std::vector<const Entry *> &batch) {
  const std::string tmp = unique_temp_path(batch[0]->path);
  const std::string source = batch_source(batch);
  {
    std::ofstream f(tmp + ".c");
    f << source;
    if (!f) throw Error("cannot write kernel source " + tmp + ".c");
  }
  std::vector<std::string> argv{kCompiler};
  argv.insert(argv.end(), flags().begin(), flags().end());
  argv.insert(argv.end(), {"-o", tmp + ".so", tmp + ".c", "-lm"});
  ProcessResult r = run_process(argv);
  std::error_code ec;
  std::filesystem::remove(tmp + ".c", ec);
  std::optional<std::string> object = r.status == 0 ? read_file(tmp + ".so") : std::nullopt;
  if (!object) {
    std::filesystem::remove(tmp + ".so", ec);
    throw InternalError("C compiler failed:\n" + r.output + "\nsource:\n" + source);
  }
  std::vector<std::string> keys, paths;
  for (const Entry *e : batch) keys.push_back(e->key), paths.push_back(e->path);
  {
    std::ofstream f(tmp + ".so", std::ios::binary | std::ios::app);
    f << cache_trailer(keys, *object);
    if (!f) throw Error("cannot write compiled kernel " + tmp + ".so");
  }
  if (!publish_cache_file(tmp + ".so", paths)) throw Error("cannot move a compiled kernel into " + cache_dir());
}

// Compiles the distinct kernels among `which` in batches of at most
// kBatchKernels, at least one batch per core, the batches in parallel. A
// batch that fails compiles again kernel by kernel, so the error shows the
// kernel at fault.
void build_batches(const std::vector<Entry> &entries, const std::vector<size_t> &which) {
  std::vector<const Entry *> todo;
  std::unordered_set<std::string> seen;
  for (size_t i : which)
    if (seen.insert(entries[i].key).second) todo.push_back(&entries[i]);
  if (todo.empty()) return;
  const size_t cores = std::max(1u, std::thread::hardware_concurrency());
  const size_t n = std::min(todo.size(), std::max(cores, (todo.size() + kBatchKernels - 1) / kBatchKernels));
  std::vector<std::vector<const Entry *>> batches(n);
  for (size_t i = 0; i < todo.size(); ++i) batches[i % n].push_back(todo[i]);
  std::vector<size_t> all(n);
  std::iota(all.begin(), all.end(), 0);
  build_parallel(all, [&](size_t b) {
    try {
      build(batches[b]);
    } catch (const InternalError &) {
      if (batches[b].size() == 1) throw;
      for (const Entry *e : batches[b]) build({e});
    }
  });
}

class CpuDevice : public Device {
 public:
  const char *name() const override { return "CPU"; }
  KernelSource source(const codegen::Program &p) const override {
    return {.name = p.name, .source = renderer::c_prelude() + renderer::render_c(p), .body = renderer::c_prelude().size(),
            .buffers = p.buf_dtypes.size(), .vars = p.vars.size()};
  }

  // Through the buffer pool (runtime/cpu/buffer_pool.h): large buffers are
  // mappings kept for reuse once freed; nothing is zeroed.
  std::shared_ptr<void> allocate(size_t bytes) override { return allocate_buffer(bytes); }

  std::string cache_file(const KernelSource &kernel) override { return entry(kernel).path; }
  std::shared_ptr<const Program> extern_gemm(const schedule::GemmShape &g) override { return sgemm_program(g); }

  void copy_in(void *dst, const void *host, size_t bytes) override { std::memcpy(dst, host, bytes); }
  void copy_out(void *host, const void *src, size_t bytes) override { std::memcpy(host, src, bytes); }
  void copy(void *dst, const void *src, size_t bytes) override { std::memcpy(dst, src, bytes); }
  bool host_addressable() const override { return true; }

  std::vector<std::shared_ptr<const Program>> compile(const std::vector<KernelSource> &kernels,
                                                      CompileStats &stats) override {
    std::vector<Entry> entries;
    for (const auto &k : kernels) entries.push_back(entry(k));
    std::vector<std::shared_ptr<const Program>> out(kernels.size());
    std::vector<size_t> misses;
    for (size_t i = 0; i < kernels.size(); ++i) {
      bool healed = false;
      out[i] = load(entries[i], &healed);
      stats.cache_healed += healed;
      if (!out[i]) misses.push_back(i);
    }
    build_batches(entries, misses);
    for (size_t i : misses) {
      bool healed = false;
      out[i] = load(entries[i], &healed);
      if (!out[i]) throw InternalError("kernel " + kernels[i].name + " unusable right after compiling it");
      stats.compiled++;
    }
    return out;
  }

 private:
  static Entry entry(const KernelSource &k) {
    std::string flag_text;
    for (const auto &f : flags()) flag_text += f + " ";
    Entry e;
    e.key = hash_hex(flag_text + "\n" + compiler_identity() + "\n" + k.name + "\n" + k.source);
    e.path = cache_dir() + "/" + e.key + ".so";
    e.name = k.name;
    e.source = k.source;
    e.body = k.body;
    return e;
  }
};

}  // namespace

Device &device() {
  static auto *d = new CpuDevice();  // leaked on purpose: programs may run during static destruction
  return *d;
}

}  // namespace loom::runtime::cpu
