#include <array>
#include <atomic>
#include <climits>
#include <cstdlib>
#include <map>
#include <mutex>
#include <optional>

#include "loom/error.h"
#include "renderer/cuda_renderer.h"
#include "runtime/cuda/cublas.h"
#include "runtime/cuda/cuda.h"
#include "runtime/cuda/cudnn.h"
#include "runtime/cuda/driver.h"
#include "runtime/cuda/nvrtc.h"
#include "runtime/compile_cache.h"

namespace loom::runtime::cuda {

namespace {

// Set by an exit handler: programs destroyed after it (static destruction)
// leave their modules to the driver's own teardown.
std::atomic<bool> exiting{false};

CUdeviceptr dptr(const void *p) { return reinterpret_cast<CUdeviceptr>(p); }

class CudaProgram : public Program {
 public:
  CudaProgram(CUmodule module, CUfunction fn, const KernelSource &k)
      : module_(module), fn_(fn), blocks_(k.blocks), threads_(k.threads), params_(k.buffers + k.vars),
        buffers_(k.buffers) {}
  ~CudaProgram() override {
    if (exiting) return;
    try {
      bind_context();
      driver().ModuleUnload(module_);  // nothing to do about a failure here
    } catch (...) {
    }
  }

  // Asynchronous: returns once the launch is queued. A device splits no work
  // across host threads, so `parallel` is moot.
  void launch(void **bufs, int64_t global_size, bool /*parallel*/) const override {
    const int64_t blocks = grid(global_size);
    if (blocks <= 0) return;  // an empty kernel
    if (blocks > INT_MAX) throw Error("CUDA: kernel launch of " + std::to_string(blocks) + " blocks is too large");
    std::array<void *, 32> few;
    std::vector<void *> many(params_ > few.size() ? params_ : 0);
    void **params = params_ > few.size() ? many.data() : few.data();
    // Each parameter's value: a buffer's device pointer, then each runtime
    // scalar's value (bufs holds a pointer to it).
    for (size_t i = 0; i < params_; ++i) params[i] = i < buffers_ ? static_cast<void *>(&bufs[i]) : bufs[i];
    bind_context();
    check(driver().LaunchKernel(fn_, static_cast<unsigned>(blocks), 1, 1, static_cast<unsigned>(threads_), 1, 1, 0,
                                nullptr, params, nullptr),
          "cuLaunchKernel");
  }

  // Launched directly where empty or too large (launch says why).
  std::optional<GraphNode> graph_node(void **bufs, int64_t global_size) const override {
    const int64_t blocks = grid(global_size);
    if (blocks <= 0 || blocks > INT_MAX) return std::nullopt;
    return graph_launch(fn_, blocks, threads_, bufs, buffers_, params_);
  }

 private:
  int64_t grid(int64_t global_size) const { return blocks_ > 0 ? blocks_ : (global_size + threads_ - 1) / threads_; }

  CUmodule module_;
  CUfunction fn_;
  int64_t blocks_, threads_;
  size_t params_, buffers_;
};

// A CUDA graph per piece of launches (runtime/launch_graph.h): its kernel
// nodes in a chain, each after the one before, submitted to the legacy
// default stream like every other launch.
class CudaGraph : public LaunchGraph {
  struct Exec {
    CUgraph graph = nullptr;
    CUgraphExec exec = nullptr;
    std::vector<CUgraphNode> nodes;
    ~Exec() {
      if (exiting) return;
      try {
        bind_context();
        if (exec) driver().GraphExecDestroy(exec);  // nothing to do about a failure here
        if (graph) driver().GraphDestroy(graph);
      } catch (...) {
      }
    }
  };
  // The node's launch; `ptrs` holds the pointers to its values the driver copies.
  static KernelNodeParams params(const GraphNode &n, std::vector<void *> &ptrs) {
    ptrs.resize(n.args.size());
    for (size_t i = 0; i < n.args.size(); i++) ptrs[i] = const_cast<uint64_t *>(&n.args[i]);
    return {static_cast<CUfunction>(const_cast<void *>(n.fn)), n.blocks, 1, 1, n.threads, 1, 1, 0, ptrs.data(),
            nullptr, nullptr, nullptr};
  }

 protected:
  std::shared_ptr<void> build(const std::vector<GraphNode> &nodes) override {
    bind_context();
    const Driver &d = driver();
    auto e = std::make_shared<Exec>();
    check(d.GraphCreate(&e->graph, 0), "cuGraphCreate");
    std::vector<void *> ptrs;
    for (const GraphNode &n : nodes) {
      const KernelNodeParams p = params(n, ptrs);
      CUgraphNode node = nullptr;
      check(d.GraphAddKernelNode(&node, e->graph, e->nodes.empty() ? nullptr : &e->nodes.back(), e->nodes.empty() ? 0 : 1, &p),
            "cuGraphAddKernelNode");
      e->nodes.push_back(node);
    }
    check(d.GraphInstantiate(&e->exec, e->graph, 0), "cuGraphInstantiate");
    return e;
  }
  void update(void *exec, size_t i, const GraphNode &n) override {
    auto *e = static_cast<Exec *>(exec);
    std::vector<void *> ptrs;
    const KernelNodeParams p = params(n, ptrs);
    bind_context();
    check(driver().GraphExecKernelNodeSetParams(e->exec, e->nodes.at(i), &p), "cuGraphExecKernelNodeSetParams");
  }
  void submit(void *exec) override {
    bind_context();
    check(driver().GraphLaunch(static_cast<Exec *>(exec)->exec, nullptr), "cuGraphLaunch");
  }
};

// Whether `fn` takes exactly n parameters, where the driver can tell (else
// true): a launch hands the driver n parameter pointers, and a kernel that
// takes more would read past them.
bool takes_parameters(CUfunction fn, size_t n) {
  const auto info = driver().FuncGetParamInfo;
  if (!info) return true;
  size_t offset = 0, size = 0;
  return (n == 0 || info(fn, n - 1, &offset, &size) == kCudaSuccess) && info(fn, n, &offset, &size) != kCudaSuccess;
}

// A program from a cubin image; nullptr (and *error set) when the driver
// rejects it or it lacks the kernel.
std::shared_ptr<const Program> load_module(const std::string &cubin, const KernelSource &k, CUresult *error) {
  bind_context();
  CUmodule module = nullptr;
  if ((*error = driver().ModuleLoadData(&module, cubin.data())) != kCudaSuccess) return nullptr;
  CUfunction fn = nullptr;
  if ((*error = driver().ModuleGetFunction(&fn, module, k.name.c_str())) != kCudaSuccess) {
    driver().ModuleUnload(module);
    return nullptr;
  }
  if (const size_t n = k.buffers + k.vars; !takes_parameters(fn, n)) {
    driver().ModuleUnload(module);
    throw InternalError("CUDA kernel " + k.name + " does not take the " + std::to_string(n) +
                        " parameters its launch passes (" + std::to_string(k.buffers) + " buffers, " +
                        std::to_string(k.vars) + " runtime scalars)");
  }
  return std::make_shared<CudaProgram>(module, fn, k);
}

// NVRTC behind the disk cache (runtime/compile_cache.h): one cubin per
// kernel, for this GPU's architecture. NVRTC compiles are independent (no
// context needed); modules load on the calling thread.
class NvrtcCompiler : public KernelCompiler {
 public:
  explicit NvrtcCompiler(std::string arch) : arch_(std::move(arch)) {}
  std::string key_text(const KernelSource &k) const override {
    return "cuda\n" + nvrtc_version() + "\n" + arch_ + "\n" + k.name + "\n" + k.source;
  }
  const char *extension() const override { return ".cubin"; }
  std::string build(const std::vector<const CacheEntry *> &batch) const override {
    const KernelSource &k = *batch.at(0)->kernel;
    const NvrtcResult r = nvrtc_compile(k.source, k.name + ".cu", arch_);
    if (!r.ok) throw InternalError("NVRTC failed to compile " + k.name + ":\n" + r.log + "\nsource:\n" + k.source);
    return r.cubin;
  }
  std::shared_ptr<const Program> load(const CacheEntry &e, const std::string &cubin, std::string &error) const override {
    CUresult code = kCudaSuccess;
    auto p = load_module(cubin, *e.kernel, &code);
    if (!p) error = error_text(code);
    return p;
  }

 private:
  std::string arch_;
};

// Device memory rounded up to a size class: multiples of 512 bytes below
// 16 MiB, of 2 MiB above (at most 1/8 wasted), never less than 512 so a
// zero-byte buffer is still a distinct pointer.
size_t size_class(size_t bytes) {
  constexpr size_t kSmall = 512, kLarge = size_t{2} << 20;
  const size_t granule = bytes < 8 * kLarge ? kSmall : kLarge;
  return bytes == 0 ? kSmall : (bytes + granule - 1) / granule * granule;
}

class CudaDevice : public Device {
 public:
  CudaDevice() : compiler_(gpu().arch()) {
    bind_context();
    std::atexit([] { exiting = true; });
  }

  const char *name() const override { return "CUDA"; }
  codegen::Target target() const override { return renderer::cuda_target(); }
  KernelSource source(const codegen::KernelSpec &p) const override {
    const renderer::CudaKernel k = renderer::render_cuda(p);
    const std::string &prelude = renderer::cuda_prelude();
    return {.name = p.name, .source = prelude + k.source, .body = prelude.size(), .blocks = k.blocks,
            .threads = k.threads, .buffers = p.buf_dtypes.size(), .vars = p.vars.size()};
  }

  // A caching allocator: a freed block goes to a free list of its size class
  // and is handed out again for that class. Reuse is safe without events
  // because every launch and copy runs in order on the legacy default stream:
  // work issued after the reuse runs after the previous owner's work.
  std::shared_ptr<void> allocate(size_t bytes) override {
    const size_t size = size_class(bytes);
    void *p = reinterpret_cast<void *>(take(size));
    return std::shared_ptr<void>(p, [this, size](void *q) { give(dptr(q), size); });
  }

  void copy_in(void *dst, const void *host, size_t bytes) override {
    if (bytes == 0) return;
    bind_context();
    check(driver().MemcpyHtoD(dptr(dst), host, bytes), "cuMemcpyHtoD");
  }
  void copy_out(void *host, const void *src, size_t bytes) override {
    if (bytes == 0) return;
    bind_context();
    check(driver().MemcpyDtoH(host, dptr(src), bytes), "cuMemcpyDtoH");
  }
  void copy(void *dst, const void *src, size_t bytes) override {
    if (bytes == 0) return;
    bind_context();
    check(driver().MemcpyDtoD(dptr(dst), dptr(src), bytes), "cuMemcpyDtoD");
  }

  void synchronize() override { cuda::synchronize(); }

  // The time between two events around the launch, on the GPU's clock.
  double timed_launch(const Program &p, void **bufs, int64_t global_size, bool parallel) override {
    bind_context();
    const Driver &d = driver();
    CUevent start = nullptr, end = nullptr;
    check(d.EventCreate(&start, 0), "cuEventCreate");
    check(d.EventCreate(&end, 0), "cuEventCreate");
    float ms = 0;
    try {
      check(d.EventRecord(start, nullptr), "cuEventRecord");
      p.launch(bufs, global_size, parallel);
      check(d.EventRecord(end, nullptr), "cuEventRecord");
      check(d.EventSynchronize(end), "cuEventSynchronize");
      check(d.EventElapsedTime(&ms, start, end), "cuEventElapsedTime");
    } catch (...) {
      d.EventDestroy(start);
      d.EventDestroy(end);
      throw;
    }
    d.EventDestroy(start);
    d.EventDestroy(end);
    return ms;
  }

  std::string cache_file(const KernelSource &kernel) override { return cache_entry(compiler_, kernel).path; }

  // cuDNN for a convolution's gathered windows (its forward pass, its weight
  // gradient), cuBLAS for strided operands, where they load and make a
  // handle on this GPU; else generated code.
  std::shared_ptr<const Program> extern_gemm(const schedule::GemmShape &g) override {
    if (g.b.view) {  // where cuDNN finds no algorithm for it, the tensor-core template's implicit GEMM
      const std::optional<CudnnConv> conv = cudnn_conv(g);
      void *handle = conv ? cudnn_handle() : nullptr;
      try {
        return handle ? cudnn_program(*conv, *cudnn(), handle, [this](size_t b) { return allocate(b); }) : nullptr;
      } catch (const Error &) {
        return nullptr;
      }
    }
    const std::optional<CublasGemm> plan = cublas_gemm(g);
    void *handle = plan ? cublas_handle() : nullptr;
    return handle ? cublas_program(*plan, *cublas(), handle) : nullptr;
  }

  bool extern_convs() const override { return cudnn_handle() != nullptr; }

  std::unique_ptr<LaunchGraph> launch_graph() override {
    return driver().graphs() ? std::make_unique<CudaGraph>() : nullptr;
  }

  std::vector<std::shared_ptr<const Program>> compile(const std::vector<KernelSource> &kernels,
                                                      CompileStats &stats) override {
    for (const auto &k : kernels) LOOM_CHECK(k.threads > 0, "CUDA kernel " + k.name + " has no threads per block");
    return compile_cached(compiler_, kernels, stats);
  }

 private:
  // One handle of each library in the primary context, made on first use
  // and kept; nullptr when the library is missing or cannot initialize.
  static void *cudnn_handle() {
    static void *const handle = []() -> void * {
      const CudnnApi *api = cudnn();
      if (!api) return nullptr;
      bind_context();
      void *h = nullptr;
      return api->create(&h) == 0 ? h : nullptr;
    }();
    return handle;
  }
  static void *cublas_handle() {
    static void *const handle = []() -> void * {
      const CublasApi *api = cublas();
      if (!api) return nullptr;
      bind_context();
      void *h = nullptr;
      if (api->create(&h) != 0) return nullptr;
      api->set_math_mode(h, kCublasMathMode);
      return h;
    }();
    return handle;
  }

  CUdeviceptr take(size_t size) {
    {
      std::lock_guard<std::mutex> l(mu_);
      if (auto it = free_.find(size); it != free_.end() && !it->second.empty()) {
        const CUdeviceptr p = it->second.back();
        it->second.pop_back();
        cached_ -= size;
        return p;
      }
    }
    bind_context();
    CUdeviceptr p = 0;
    CUresult r = driver().MemAlloc(&p, size);
    if (r == kCudaErrorOutOfMemory) {  // the cache may hold what is missing: give it back and retry once
      release_cache();
      r = driver().MemAlloc(&p, size);
    }
    if (r == kCudaErrorOutOfMemory) {
      size_t free = 0, total = 0;
      driver().MemGetInfo(&free, &total);
      throw Error("CUDA: out of memory allocating " + std::to_string(size) + " bytes on " + gpu().name + " (" +
                  std::to_string(free >> 20) + " MiB free of " + std::to_string(total >> 20) + " MiB)");
    }
    check(r, "cuMemAlloc");
    return p;
  }

  void give(CUdeviceptr p, size_t size) noexcept {
    std::lock_guard<std::mutex> l(mu_);
    try {
      free_[size].push_back(p);
      cached_ += size;
    } catch (...) {  // no memory for the list: the block is lost, not reused early
    }
  }

  // Frees every cached block, after the work that may still use them.
  void release_cache() {
    std::lock_guard<std::mutex> l(mu_);
    if (cached_ == 0) return;
    driver().CtxSynchronize();
    for (auto &[size, blocks] : free_)
      for (CUdeviceptr p : blocks) driver().MemFree(p);
    free_.clear();
    cached_ = 0;
  }

  const NvrtcCompiler compiler_;  // for this GPU's "sm_XY"
  std::mutex mu_;
  std::map<size_t, std::vector<CUdeviceptr>> free_;  // size class -> free blocks
  size_t cached_ = 0;                                // bytes in free_
};

}  // namespace

std::string missing() {
  if (const std::string &why = driver_missing(); !why.empty()) return why;
  const std::string &why = nvrtc_missing();
  if (why.empty() || why.starts_with("CUDA")) return why;
  return "CUDA: " + why;
}

Device &device() {
  if (const std::string why = missing(); !why.empty()) throw Error(why);
  static auto *d = new CudaDevice();  // leaked on purpose, like the CPU device: buffers may be freed at exit
  return *d;
}

void synchronize() {
  bind_context();
  check(driver().CtxSynchronize(), "cuCtxSynchronize");
}

}  // namespace loom::runtime::cuda
