#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <unordered_map>

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
// shared object.
const std::vector<std::string> &flags() {
  static const std::vector<std::string> f = [] {
    std::vector<std::string> v = renderer::c_flags();
    v.insert(v.end(), {"-fPIC", "-shared"});
    return v;
  }();
  return f;
}
const char *kCompiler = "cc";

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

struct Entry {
  std::string key, path, source;
};

// Loads a cached kernel; nullptr when there is none, or when the entry is
// unusable (then it is deleted and *healed set). Each cache file is the shared
// object followed by the cache trailer (runtime/disk_cache.h), checked before
// dlopen.
std::shared_ptr<const Program> load(const Entry &e, const std::string &name, bool *healed) {
  if (!std::filesystem::exists(e.path)) return nullptr;
  if (read_cache_object(e.path, e.key)) {
    if (void *h = dlopen(e.path.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      if (auto fn = reinterpret_cast<KernelFn>(dlsym(h, name.c_str()))) return std::make_shared<CpuProgram>(h, fn);
      dlclose(h);
    }
  }
  std::error_code ec;
  std::filesystem::remove(e.path, ec);  // corrupt, truncated or foreign: rebuild it
  *healed = true;
  return nullptr;
}

void build(const Entry &e) {
  const std::string tmp = unique_temp_path(e.path);
  {
    std::ofstream f(tmp + ".c");
    f << e.source;
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
    throw InternalError("C compiler failed:\n" + r.output + "\nsource:\n" + e.source);
  }
  {
    std::ofstream f(tmp + ".so", std::ios::binary | std::ios::app);
    f << cache_trailer(e.key, *object);
    if (!f) throw Error("cannot write compiled kernel " + tmp + ".so");
  }
  std::filesystem::rename(tmp + ".so", e.path, ec);  // atomic: readers see the old file or the whole new one
  if (ec) {
    std::filesystem::remove(tmp + ".so", ec);
    throw Error("cannot move a compiled kernel into " + e.path);
  }
}

class CpuDevice : public Device {
 public:
  const char *name() const override { return "CPU"; }
  KernelSource source(const codegen::Program &p) const override {
    return {p.name, renderer::c_prelude() + renderer::render_c(p), renderer::c_prelude().size()};
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
      out[i] = load(entries[i], kernels[i].name, &healed);
      stats.cache_healed += healed;
      if (!out[i]) misses.push_back(i);
    }
    compile_parallel(entries, misses);
    for (size_t i : misses) {
      bool healed = false;
      out[i] = load(entries[i], kernels[i].name, &healed);
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
    e.source = k.source;
    return e;
  }

  // One compiler process per core at a time.
  static void compile_parallel(const std::vector<Entry> &entries, const std::vector<size_t> &which) {
    build_parallel(which, [&](size_t i) { build(entries[i]); });
  }
};

}  // namespace

Device &device() {
  static auto *d = new CpuDevice();  // leaked on purpose: programs may run during static destruction
  return *d;
}

}  // namespace loom::runtime::cpu
