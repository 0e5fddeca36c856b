#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "knobs/knobs.h"
#include "loom/error.h"
#include "renderer/c_renderer.h"
#include "runtime/cpu/blas.h"
#include "runtime/cpu/buffer_pool.h"
#include "runtime/cpu/cpu.h"
#include "runtime/compile_cache.h"
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

// The macros the compiler predefines for the kernels' flags: the -march
// resolved to the instruction sets it enables (-march=native names none).
const std::string &target_macros() {
  static const std::string text = [] {
    if (!renderer::machine_runs(knobs::march()))
      throw Error("LOOM_MARCH=" + knobs::march() + ": this machine cannot run code compiled for it");
    std::vector<std::string> command{kCompiler};
    const std::vector<std::string> f = renderer::c_flags();
    command.insert(command.end(), f.begin(), f.end());
    command.insert(command.end(), {"-dM", "-E", "-x", "c", "/dev/null"});
    ProcessResult r = run_process(command);
    if (r.status != 0)
      throw Error("the C compiler '" + std::string(kCompiler) + "' rejects the kernels' flags (LOOM_MARCH=" +
                  knobs::march() + "): " + r.output);
    return r.output;
  }();
  return text;
}
bool defines(const char *macro) { return target_macros().find("#define " + std::string(macro) + " ") != std::string::npos; }

// The compiler's identity (version and target) and the instruction sets the
// kernels may use, part of every cache key: a cache copied to a machine of
// another kind, or filled under another LOOM_MARCH, misses instead of
// loading code this machine cannot run.
const std::string &compiler_identity() {
  static const std::string id = [] {
    ProcessResult r = run_process({kCompiler, "-dumpfullversion", "-dumpmachine"});
    if (r.status != 0) throw Error(std::string("cannot run the C compiler '") + kCompiler + "': " + r.output);
    return r.output + "target macros " + hash_hex(target_macros()) + "\n";
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

}  // namespace

// The compiler's predefined macros for the kernels' flags: 64 bytes with
// AVX-512F, 32 with AVX, 16 otherwise (SSE, NEON).
int64_t vector_bytes() {
  static const int64_t bytes = defines("__AVX512F__") ? 64 : defines("__AVX__") ? 32 : 16;
  return bytes;
}

bool fused_multiply_add() {
  static const bool fma = defines("__FMA__") || defines("__ARM_FEATURE_FMA");
  return fma;
}

int64_t l2_cache_bytes() {
#ifdef _SC_LEVEL2_CACHE_SIZE
  static const int64_t bytes = std::max<long>(0, sysconf(_SC_LEVEL2_CACHE_SIZE));
#else
  static const int64_t bytes = 0;
#endif
  return bytes;
}

namespace {

// A kernel's function is renamed to its symbol (derived from its cache key),
// so kernels of the same name can share a translation unit.
std::string symbol(const CacheEntry &e) { return "loom_" + e.key; }

// The C compiler behind the disk cache (runtime/compile_cache.h). Each cache
// file is a shared object holding a batch of kernels; its trailer is checked
// before dlopen (a loader would crash on a truncated object).
class CpuCompiler : public KernelCompiler {
 public:
  std::string key_text(const KernelSource &k) const override {
    std::string flag_text;
    for (const auto &f : flags()) flag_text += f + " ";
    return flag_text + "\n" + compiler_identity() + "\n" + k.name + "\n" + k.source;
  }
  const char *extension() const override { return ".so"; }
  size_t batch_limit() const override { return kBatchKernels; }

  // One translation unit for the batch: the prelude once (every CPU kernel's
  // source starts with the same one), then each kernel's text with its
  // function renamed to its symbol.
  std::string build(const std::vector<const CacheEntry *> &batch) const override {
    const KernelSource &first = *batch[0]->kernel;
    std::string source = first.source.substr(0, first.body);
    for (const CacheEntry *e : batch)
      source += "#define " + e->kernel->name + " " + symbol(*e) + "\n" + e->kernel->source.substr(e->kernel->body) +
                "\n#undef " + e->kernel->name + "\n";
    std::vector<std::string> command{kCompiler};
    command.insert(command.end(), flags().begin(), flags().end());
    return compile_shared_object(command, {"-lm"}, source, batch[0]->path, ".c", "C compiler failed");
  }

  std::shared_ptr<const Program> load(const CacheEntry &e, const std::string &, std::string &error) const override {
    void *handle = nullptr;
    void *fn = open_symbol(e.path, symbol(e), handle, error);
    return fn ? std::make_shared<CpuProgram>(handle, reinterpret_cast<KernelFn>(fn)) : nullptr;
  }
};

class CpuDevice : public Device {
 public:
  const char *name() const override { return "CPU"; }
  codegen::Target target() const override {
    codegen::Target t;
    t.group_bytes = t.vector_bytes = vector_bytes();
    t.fma = fused_multiply_add();
    if (l2_cache_bytes() > 0) t.l2_bytes = l2_cache_bytes();
    return t;
  }
  KernelSource source(const codegen::KernelSpec &p) const override {
    return {.name = p.name, .source = renderer::c_prelude() + renderer::render_c(p), .body = renderer::c_prelude().size(),
            .buffers = p.buf_dtypes.size(), .vars = p.vars.size()};
  }

  // Through the buffer pool (runtime/cpu/buffer_pool.h): large buffers are
  // mappings kept for reuse once freed; nothing is zeroed.
  std::shared_ptr<void> allocate(size_t bytes) override { return allocate_buffer(bytes); }

  std::string cache_file(const KernelSource &kernel) override { return cache_entry(compiler_, kernel).path; }
  std::shared_ptr<const Program> extern_gemm(const schedule::GemmShape &g) override { return sgemm_program(g); }

  void copy_in(void *dst, const void *host, size_t bytes) override { std::memcpy(dst, host, bytes); }
  void copy_out(void *host, const void *src, size_t bytes) override { std::memcpy(host, src, bytes); }
  void copy(void *dst, const void *src, size_t bytes) override { std::memcpy(dst, src, bytes); }
  bool host_addressable() const override { return true; }

  std::vector<std::shared_ptr<const Program>> compile(const std::vector<KernelSource> &kernels,
                                                      CompileStats &stats) override {
    return compile_cached(compiler_, kernels, stats);
  }

 private:
  CpuCompiler compiler_;
};

}  // namespace

Device &device() {
  static auto *d = new CpuDevice();  // leaked on purpose: programs may run during static destruction
  return *d;
}

}  // namespace loom::runtime::cpu
