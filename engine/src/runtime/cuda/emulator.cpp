#include "runtime/cuda/emulator.h"

#include <dlfcn.h>

#include <cstring>
#include <functional>
#include <memory>
#include <new>
#include <optional>

#include "loom/error.h"
#include "renderer/cuda_renderer.h"
#include "runtime/cuda/fibers.h"
#include "runtime/compile_cache.h"
#include "runtime/disk_cache.h"
#include "uop/ops.h"

namespace loom::runtime::cuda {

namespace {

// CUDA's built-ins for a kernel compiled as C++ (the prelude's fixed-width
// typedefs stand, so no C++ header is included; the math functions are
// declared: math_declarations). Half conversions use GCC's _Float16, which
// rounds as PTX's cvt.
const char *kBuiltins = R"(#define LOOM_CUDA_EMULATED 1
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__ static
#define __align__(n) __attribute__((aligned(n)))
struct loom_dim3 { unsigned x, y, z; };
static loom_dim3 threadIdx, blockIdx, blockDim;
static void (*loom_emu_sync)(void);
/* The block's threads are fibers of one OS thread: each restores its index
   after a barrier. */
static inline void __syncthreads() { loom_dim3 t = threadIdx; loom_emu_sync(); threadIdx = t; }
/* Vector accesses trap where the GPU's would fault: not aligned to their size. */
struct alignas(16) float4 { float x, y, z, w; };
struct alignas(8) uint2 { unsigned x, y; };
static inline float4 make_float4(float x, float y, float z, float w) { return float4{x, y, z, w}; }
static inline uint2 make_uint2(unsigned x, unsigned y) { return uint2{x, y}; }
template <typename V>
static inline V loom_emu_load(const void *p) {
  if ((unsigned long long)p % sizeof(V)) __builtin_trap();
  V v; __builtin_memcpy(&v, p, sizeof v); return v;
}
template <typename V>
static inline void loom_emu_store(void *p, V v) {
  if ((unsigned long long)p % sizeof(V)) __builtin_trap();
  __builtin_memcpy(p, &v, sizeof v);
}
static inline float4 loom_ld4(const float *p) { return loom_emu_load<float4>(p); }
static inline void loom_st4(float *p, float4 v) { loom_emu_store(p, v); }
static inline uint2 loom_ld8(const unsigned short *p) { return loom_emu_load<uint2>(p); }
static inline void loom_st8(unsigned short *p, uint2 v) { loom_emu_store(p, v); }
/* The blocks run one after another, their threads as fibers: nothing runs
   between an atomic's load and its store. */
template <typename T>
static inline T atomicAdd(T *p, T v) { T old = *p; *p = old + v; return old; }
static inline float __int_as_float(int i) { float f; __builtin_memcpy(&f, &i, 4); return f; }
static inline float __uint_as_float(unsigned i) { float f; __builtin_memcpy(&f, &i, 4); return f; }
static inline unsigned __float_as_uint(float f) { unsigned i; __builtin_memcpy(&i, &f, 4); return i; }
static inline float loom_h2f(unsigned short h) { _Float16 x; __builtin_memcpy(&x, &h, 2); return (float)x; }
static inline unsigned short loom_f2h(float f) { _Float16 x = (_Float16)f; unsigned short h; __builtin_memcpy(&h, &x, 2); return h; }
/* mma.m16n8k16 for one warp: each lane's fragments go to shared slots, then
   every lane sums its four elements of C in k order from them. */
static unsigned loom_emu_frags[1024][6];
static float loom_emu_half(unsigned bits, int bf16) {
  if (bf16) return __uint_as_float(bits << 16);
  return loom_h2f((unsigned short)bits);
}
static void loom_emu_mma(float *c, const unsigned *a, const unsigned *b, int bf16) {
  for (int r = 0; r < 4; r++) loom_emu_frags[threadIdx.x][r] = a[r];
  for (int r = 0; r < 2; r++) loom_emu_frags[threadIdx.x][4 + r] = b[r];
  __syncthreads();
  const unsigned warp = threadIdx.x & ~31u, lane = threadIdx.x & 31u, grp = lane >> 2, t = lane & 3u;
  for (unsigned i = 0; i < 4; i++) {
    const unsigned row = grp + 8 * (i >> 1), col = 2 * t + (i & 1);
    float s = c[i];
    for (unsigned kk = 0; kk < 16; kk++) {
      const unsigned ea = (kk & 1) + 2 * (row >= 8) + 4 * (kk >= 8), eb = (kk & 1) + 2 * (kk >= 8);
      const unsigned la = warp + 4 * (row & 7) + ((kk & 7) >> 1), lb = warp + 4 * col + ((kk & 7) >> 1);
      const float x = loom_emu_half(loom_emu_frags[la][ea >> 1] >> (16 * (ea & 1)) & 0xffffu, bf16);
      const float y = loom_emu_half(loom_emu_frags[lb][4 + (eb >> 1)] >> (16 * (eb & 1)) & 0xffffu, bf16);
      s += x * y;
    }
    c[i] = s;
  }
  __syncthreads();
}
/* cp.async: a thread's copies land at its wait for all but the newest n
   committed groups, not before, so a stage read before its wait reads
   what it held. */
struct loom_emu_copy { unsigned short *dst; const unsigned short *src; int bytes, group; };
static loom_emu_copy loom_emu_copies[1024][16];
static int loom_emu_ncopies[1024], loom_emu_groups[1024];
static inline void loom_cp_async16(unsigned short *dst, const unsigned short *src, int bytes) {
  const unsigned t = threadIdx.x;
  if ((unsigned long long)dst % 16 || (unsigned long long)src % 16 || bytes < 0 || bytes > 16 || loom_emu_ncopies[t] == 16)
    __builtin_trap();
  loom_emu_copies[t][loom_emu_ncopies[t]++] = loom_emu_copy{dst, src, bytes, loom_emu_groups[t]};
}
static inline void loom_cp_async_commit() { loom_emu_groups[threadIdx.x]++; }
static void loom_emu_cp_wait(int newest) {
  const unsigned t = threadIdx.x;
  int kept = 0;
  for (int i = 0; i < loom_emu_ncopies[t]; i++) {
    const loom_emu_copy c = loom_emu_copies[t][i];
    if (c.group >= loom_emu_groups[t] - newest) { loom_emu_copies[t][kept++] = c; continue; }
    __builtin_memcpy(c.dst, c.src, c.bytes);
    __builtin_memset((char *)c.dst + c.bytes, 0, 16 - c.bytes);
  }
  loom_emu_ncopies[t] = kept;
}
static inline void loom_cp_async_wait1() { loom_emu_cp_wait(1); }
static inline void loom_cp_async_wait0() { loom_emu_cp_wait(0); }
/* ldmatrix .x4 for one warp: each lane's row address to a shared slot, then
   every lane reads its registers from the rows. */
static const unsigned short *loom_emu_rows[1024];
static void loom_emu_ldsm(unsigned *r, const unsigned short *p, int trans) {
  if ((unsigned long long)p % 16) __builtin_trap();
  loom_emu_rows[threadIdx.x] = p;
  __syncthreads();
  const unsigned warp = threadIdx.x & ~31u, g = (threadIdx.x & 31u) >> 2, t = threadIdx.x & 3u;
  for (unsigned q = 0; q < 4; q++) {
    const unsigned short *const *m = loom_emu_rows + warp + 8 * q;
    const unsigned lo = trans ? m[2 * t][g] : m[g][2 * t], hi = trans ? m[2 * t + 1][g] : m[g][2 * t + 1];
    r[q] = lo | hi << 16;
  }
  __syncthreads();
}
static inline void loom_ldsm_x4(unsigned *r, const unsigned short *p) { loom_emu_ldsm(r, p, 0); }
static inline void loom_ldsm_x4_trans(unsigned *r, const unsigned short *p) { loom_emu_ldsm(r, p, 1); }
static unsigned long long loom_emu_lanes[1024];
template <typename T>
static T __shfl_xor_sync(unsigned, T v, int lane_mask) {
  unsigned long long b = 0;
  __builtin_memcpy(&b, &v, sizeof v);
  loom_emu_lanes[threadIdx.x] = b;
  __syncthreads();
  b = loom_emu_lanes[threadIdx.x ^ (unsigned)lane_mask];
  __syncthreads();
  __builtin_memcpy(&v, &b, sizeof v);
  return v;
}
)";

using Entry = void (*)(void **bufs, unsigned block, unsigned thread, unsigned threads, void (*sync)());

// The call of the kernel from an entry every kernel has, its parameters from
// the buffer array: the buffers' pointers, then the runtime scalars' values
// the array points to.
std::string entry_point(const KernelSource &k) {
  std::string call = k.name + "(";
  const std::vector<std::string> params = renderer::cuda_params(k.source, k.name);
  for (size_t i = 0; i < params.size(); i++) {
    const std::string at = "bufs[" + std::to_string(i) + "]";
    if (i < k.buffers) {
      call += std::string(i ? ", " : "") + "(" + params[i].substr(0, params[i].find("__restrict__")) + ")" + at;
    } else {  // "const <type> v<slot>"
      const std::string type = params[i].substr(0, params[i].rfind(' '));
      call += ", *(" + type + " *)" + at;
    }
  }
  return k.source + "\nextern \"C\" void loom_emu_entry(void **bufs, unsigned block, unsigned thread, unsigned threads, "
                    "void (*sync)()) {\n  blockIdx.x = block; threadIdx.x = thread; blockDim.x = threads; loom_emu_sync = sync;\n"
                    "  loom_emu_ncopies[thread] = loom_emu_groups[thread] = 0;\n  " +
         call + ");\n}\n";
}

// A block's threads as fibers on the calling thread (runtime/cuda/fibers.h):
// each runs until its next __syncthreads or its end, in thread order; a round
// over them all is one barrier. Every thread of a loom kernel meets the same
// barriers (the block fold), so a round is exactly CUDA's __syncthreads.
void run_block_fibers(Entry fn, void **bufs, unsigned blocks, unsigned threads) {
  for (unsigned b = 0; b < blocks; b++)
    run_fibers(threads, [&](unsigned t) { fn(bufs, b, t, threads, fiber_yield); });
}

class EmulatedProgram : public Program {
 public:
  EmulatedProgram(void *handle, Entry fn, const KernelSource &k, bool synced)
      : handle_(handle), fn_(fn), blocks_(k.blocks), threads_(k.threads), buffers_(k.buffers),
        params_(k.buffers + k.vars), synced_(synced) {}
  ~EmulatedProgram() override { dlclose(handle_); }
  void launch(void **bufs, int64_t, bool) const override {
    const auto blocks = static_cast<unsigned>(blocks_), threads = static_cast<unsigned>(threads_);
    if (synced_) return run_block_fibers(fn_, bufs, blocks, threads);
    for (unsigned b = 0; b < blocks; b++)
      for (unsigned t = 0; t < threads; t++) fn_(bufs, b, t, threads, nullptr);
  }
  std::optional<GraphNode> graph_node(void **bufs, int64_t) const override {
    return graph_launch(this, blocks_, threads_, bufs, buffers_, params_);
  }

 private:
  void *handle_;
  Entry fn_;
  int64_t blocks_, threads_;
  size_t buffers_, params_;
  bool synced_;
};

// A graph as the emulator runs one: each piece's own copy of its nodes,
// launched in order at its submission, so a node whose update is missed
// runs with its old arguments as on a GPU.
class EmulatedGraph : public LaunchGraph {
 protected:
  std::shared_ptr<void> build(const std::vector<GraphNode> &nodes) override {
    return std::make_shared<std::vector<GraphNode>>(nodes);
  }
  void update(void *exec, size_t i, const GraphNode &node) override {
    static_cast<std::vector<GraphNode> *>(exec)->at(i) = node;
  }
  void submit(void *exec) override {
    for (GraphNode &n : *static_cast<std::vector<GraphNode> *>(exec)) {
      std::vector<void *> bufs(n.args.size());
      for (size_t i = 0; i < bufs.size(); i++)
        bufs[i] = i < n.buffers ? reinterpret_cast<void *>(static_cast<uintptr_t>(n.args[i])) : &n.args[i];
      static_cast<const EmulatedProgram *>(n.fn)->launch(bufs.data(), 0, false);
    }
  }
};

// The translation unit of a kernel: the built-ins, its source and its entry point.
// The math library's functions the ops' rows name (uop/ops.def), for float
// and double operands.
std::string math_declarations() {
  std::string s = "extern \"C\" {\n";
  for (const uop::OpInfo &o : uop::kOps) {
    if (!*o.math) continue;
    auto decl = [&](const char *type, const char *suffix) {
      std::string params = type;
      for (int i = 1; i < o.arity; ++i) params += std::string(", ") + type;
      s += std::string(type) + " " + o.math + suffix + "(" + params + ");\n";
    };
    decl("float", "f");
    decl("double", "");
  }
  return s + "}\n";
}

std::string unit_text(const KernelSource &k) {
  static const std::string declarations = math_declarations();
  return declarations + kBuiltins + entry_point(k);
}

// A kernel whose threads meet barriers (its own or a fold's) runs each block's
// threads as fibers.
bool synchronizes(const KernelSource &k) {
  for (const char *call : {"__syncthreads(", "loom_group_fold(", "loom_group_scan(", "loom_mma_", "loom_ldsm_"})
    if (k.source.find(call, k.body) != std::string::npos) return true;
  return false;
}

// The host C++ compiler behind the disk cache (runtime/compile_cache.h): one
// shared object per kernel, its entry point `loom_emu_entry`.
class EmulatorCompiler : public KernelCompiler {
 public:
  std::string key_text(const KernelSource &k) const override { return "cuda-emulator\n" + unit_text(k); }
  const char *extension() const override { return ".emu.so"; }
  std::string build(const std::vector<const CacheEntry *> &batch) const override {
    const CacheEntry &e = *batch.at(0);
    return compile_shared_object({"c++", "-std=c++17", "-O1", "-fPIC", "-shared", "-fwrapv", "-ffp-contract=off", "-w"},
                                 {}, unit_text(*e.kernel), e.path, ".cpp", "emulated CUDA kernel failed to compile");
  }
  std::shared_ptr<const Program> load(const CacheEntry &e, const std::string &, std::string &error) const override {
    void *handle = nullptr;
    void *fn = open_symbol(e.path, "loom_emu_entry", handle, error);
    if (!fn) return nullptr;
    const KernelSource &k = *e.kernel;
    return std::make_shared<EmulatedProgram>(handle, reinterpret_cast<Entry>(fn), k, synchronizes(k));
  }
};

class Emulator : public Device {
 public:
  const char *name() const override { return "CUDA"; }
  codegen::Target target() const override { return renderer::cuda_target(); }
  KernelSource source(const codegen::KernelSpec &p) const override {
    const renderer::CudaKernel k = renderer::render_cuda(p);
    return {.name = p.name, .source = renderer::cuda_prelude() + k.source, .body = renderer::cuda_prelude().size(),
            .blocks = k.blocks, .threads = k.threads, .buffers = p.buf_dtypes.size(), .vars = p.vars.size()};
  }
  std::shared_ptr<void> allocate(size_t bytes) override {
    // Aligned as cuMemAlloc's (256 bytes), so vector accesses are checked as on a GPU.
    return std::shared_ptr<void>(::operator new(std::max<size_t>(bytes, 64), std::align_val_t{256}),
                                 [](void *p) { ::operator delete(p, std::align_val_t{256}); });
  }
  void copy_in(void *dst, const void *host, size_t bytes) override { std::memcpy(dst, host, bytes); }
  void copy_out(void *host, const void *src, size_t bytes) override { std::memcpy(host, src, bytes); }
  void copy(void *dst, const void *src, size_t bytes) override { std::memcpy(dst, src, bytes); }
  std::string cache_file(const KernelSource &k) override { return cache_entry(compiler_, k).path; }
  std::shared_ptr<const Program> extern_gemm(const schedule::GemmShape &g) override {
    if (g.b.view) {
      static void *const conv_handle = [] {
        void *h = nullptr;
        emulated_cudnn().create(&h);
        return h;
      }();
      const std::optional<CudnnConv> conv = cudnn_conv(g);
      return conv ? cudnn_program(*conv, emulated_cudnn(), conv_handle, [this](size_t b) { return allocate(b); })
                  : nullptr;
    }
    static void *const handle = [] {
      void *h = nullptr;
      emulated_cublas().create(&h);
      return h;
    }();
    const std::optional<CublasGemm> plan = cublas_gemm(g);
    return plan ? cublas_program(*plan, emulated_cublas(), handle) : nullptr;
  }
  bool extern_convs() const override { return true; }
  std::unique_ptr<LaunchGraph> launch_graph() override { return std::make_unique<EmulatedGraph>(); }
  std::vector<std::shared_ptr<const Program>> compile(const std::vector<KernelSource> &kernels,
                                                      CompileStats &stats) override {
    return compile_cached(compiler_, kernels, stats);
  }

 private:
  EmulatorCompiler compiler_;
};

}  // namespace

Device &emulator() {
  static auto *d = new Emulator();  // leaked like the CPU device: programs may run during static destruction
  return *d;
}

}  // namespace loom::runtime::cuda
