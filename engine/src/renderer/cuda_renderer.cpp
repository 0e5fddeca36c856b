// The CUDA target (cuda_renderer.h). Two launch shapes, planned by
// codegen/launch.h from cuda_target():
//  - one thread per iteration of the output loops: their leading chain (the
//    global loop and each output loop that is the whole body of the one
//    before, after values only) is the thread index, split by division. An
//    iteration is one output element, or an elementwise kernel's group of 16
//    bytes (cuda_target(): float4 accesses where aligned);
//  - one block per output ("grouped"): a kernel with few outputs whose
//    per-thread loops are all reductions runs each such loop strided over
//    the block's threads, then folds the threads' accumulators (warp
//    shuffles, then one partial per warp in shared memory, folded in warp
//    order by every thread, so all hold the same total); thread 0 stores.
//    Loops nested alone in such a loop run with it as one loop over the
//    nest's terms, so that consecutive threads read consecutive terms.
//    A long scan runs a block per line: each thread takes one run of the
//    line, folds its terms, takes the block's exclusive scan of the runs'
//    totals (in thread order) as its start, and scans its run again,
//    storing (scan_runs).
#include "renderer/cuda_renderer.h"

#include <set>

#include "loom/error.h"
#include "renderer/cstyle.h"
#include "renderer/cuda_library.h"
#include "uop/graph.h"

namespace loom::renderer {

namespace {

using codegen::Launch;
using codegen::trip;

class CudaRenderer : public CStyleRenderer {
 public:
  // A template (a library kernel) launches as it says, not as planned.
  explicit CudaRenderer(const codegen::KernelSpec &p) : launch_(p.launch) {
    LOOM_CHECK(launch_.block_threads > 0 || p.library,
               "CUDA kernel " + p.name + ": its spec was not planned for a GPU target");
  }
  const Launch &launch() const { return launch_; }

  // A pointer per buffer (slot 0's written), then each runtime scalar by value.
  std::string params(const codegen::KernelSpec &p) const {
    std::string h;
    for (size_t i = 0; i < p.buf_dtypes.size(); i++)
      h += std::string(i ? ", const " : "") + mem_type(p.buf_dtypes[i]) + " *__restrict__ data" + std::to_string(i);
    for (const UOpRef &v : p.vars) h += std::string(", const ") + reg_type(v->dtype) + " " + var_name(v);
    return h;
  }

  std::string header() override {
    const codegen::KernelSpec &p = program();
    std::string h = "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(threads()) + ") " + p.name + "(" +
                    params(p) + ") {\n";
    if (launch_.threads.empty()) return h;
    if (launch_.grouped) {
      h += "  const int64_t gid = blockIdx.x;\n";
    } else {
      h += "  const int64_t gid = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;\n";
      h += "  if (gid >= " + std::to_string(launch_.outputs) + ") return;\n";
    }
    int64_t inner = launch_.outputs;
    for (size_t i = 0; i < launch_.threads.size(); i++) {
      const int64_t n = trip(launch_.threads[i]);
      inner /= n;
      std::string e = inner == 1 ? "gid" : "(gid / " + std::to_string(inner) + ")";
      if (i > 0) e += " % " + std::to_string(n);
      h += "  const int64_t r" + std::to_string(launch_.threads[i]->arg_as<int64_t>()) + " = " + e + ";\n";
    }
    return h;
  }

  std::string loop(const UOpRef &range, const std::string &r) override {
    const std::string n = std::to_string(trip(range));
    if (auto flat = launch_.flattened.find(range.get()); flat != launch_.flattened.end()) {
      // One loop over the nest's terms; each loop's variable divided out of it.
      std::vector<UOpRef> nest{range};
      nest.insert(nest.end(), flat->second.begin(), flat->second.end());
      int64_t total = 1;
      for (const UOpRef &x : nest) total *= trip(x);
      const std::string f = r + "_flat";
      std::string text = "for (int64_t " + f + " = threadIdx.x; " + f + " < " + std::to_string(total) + "; " + f +
                         " += blockDim.x) {";
      int64_t inner = total;
      for (size_t i = 0; i < nest.size(); i++) {
        const int64_t m = trip(nest[i]);
        inner /= m;
        std::string e = inner == 1 ? f : "(" + f + " / " + std::to_string(inner) + ")";
        if (i > 0) e += " % " + std::to_string(m);
        text += "\n  const int64_t r" + std::to_string(nest[i]->arg_as<int64_t>()) + " = " + e + ";";
      }
      return text;
    }
    if (launch_.strided.count(range.get()))
      return "for (int64_t " + r + " = threadIdx.x; " + r + " < " + n + "; " + r + " += blockDim.x) {";
    return "for (int64_t " + r + " = 0; " + r + " < " + n + "; " + r + "++) {";
  }

  // Memory vectors (codegen/target.h): loads and stores of 4 lanes at a
  // multiple of 4 elements (aligned, as every buffer starts), one float4 in
  // registers (halves converted: 8-byte accesses), GEPs of their lanes and
  // the lanes gathered for a store.
  std::string vector_statement(const UOpRef &u) override {
    static const char *kLane[] = {".x", ".y", ".z", ".w"};
    auto at = [&] {
      const DType d = u->src[0]->dtype;
      LOOM_CHECK(d == DType::Float32 || d == DType::Float16 || d == DType::BFloat16,
                 std::string("no CUDA vector access of ") + dtype_name(d));
      return std::string(d == DType::Float32 ? "4" : d == DType::Float16 ? "4h" : "4bf") + "(&" +
             buffer(u->src[0]->arg_as<int64_t>()) + "[" + operand(u, 1) + "]";
    };
    switch (u->op) {
      case Op::Load: {
        std::string e = "loom_ld" + at() + ")";
        if (u->src.size() > 2) e = operand(u, 2) + " ? " + e + " : make_float4(0.0f, 0.0f, 0.0f, 0.0f)";
        return "float4 " + def(u, "val") + " = " + e + ";";
      }
      case Op::Store: {
        const std::string st = "loom_st" + at() + ", " + operand(u, 2) + ");";
        return u->src.size() > 3 ? "if (" + operand(u, 3) + ") " + st : st;
      }
      case Op::Gep:
        return "float " + def(u, "alu") + " = " + name_of(u->src[0]) + kLane[u->arg_as<int64_t>()] + ";";
      case Op::Vectorize: {
        LOOM_CHECK(u->src.size() == 4, "CUDA vectors have 4 lanes");
        std::string e;
        for (size_t i = 0; i < 4; i++) e += (i ? ", " : "") + name_of(u->src[i]);
        return "float4 " + def(u, "alu") + " = make_float4(" + e + ");";
      }
      default: LOOM_CHECK(false, std::string("no CUDA vector form for ") + uop::op_name(u->op));
    }
    return "";
  }

  int64_t threads() const { return launch_.threads_per_block(); }
  int64_t blocks() const { return launch_.blocks(); }

 protected:
  const Table &statements() const override {
    static const Table t = [] {
      Table s = statement_rules();
      const Rule open = s.at(Op::Range), close = s.at(Op::EndRange), store = s.at(Op::Store);
      s[Op::Range] = [open](CStyleRenderer &r, const UOpRef &u) {
        CudaRenderer &c = self(r);
        if (c.launch_.scan == u.get()) return c.scan_runs(u, open);
        const std::string text = open(r, u);  // binds the loop variable
        if (c.launch_.inner_flat.count(u.get())) return "// r" + std::to_string(u->arg_as<int64_t>()) + ": in the loop above";
        return c.launch_.collapsed.count(u.get()) ? "// r" + std::to_string(u->arg_as<int64_t>()) + ": the thread index"
                                                  : text;
      };
      s[Op::EndRange] = [close](CStyleRenderer &r, const UOpRef &u) {
        CudaRenderer &c = self(r);
        if (c.launch_.collapsed.count(u->src[0].get())) return std::string("// (thread index)");
        if (c.launch_.inner_flat.count(u->src[0].get())) return std::string("// (in the loop above)");
        std::string text = close(r, u);
        if (c.launch_.strided.count(u->src[0].get())) text += c.fold_group(u->src[0]);
        return text;
      };
      s[Op::Store] = [store](CStyleRenderer &r, const UOpRef &u) {
        const Launch &l = self(r).launch_;
        return l.grouped && !l.scan ? "if (threadIdx.x == 0) { " + store(r, u) + " }" : store(r, u);
      };
      // atomicAdd(&buf[index], value), under its gate; int64 as CUDA's unsigned long long (the same bits)
      s[Op::AtomicAdd] = [](CStyleRenderer &r, const UOpRef &u) {
        const bool wide = u->src[2]->dtype == DType::Int64;
        const std::string at = "&" + r.buffer(u->src[0]->arg_as<int64_t>()) + "[" + r.operand(u, 1) + "]";
        const std::string add = wide ? "atomicAdd((unsigned long long *)" + at + ", (unsigned long long)" + r.operand(u, 2) + ");"
                                     : "atomicAdd(" + at + ", " + r.operand(u, 2) + ");";
        return u->src.size() > 3 ? "if (" + r.operand(u, 3) + ") " + add : add;
      };
      return s;
    }();
    return t;
  }

 private:
  static CudaRenderer &self(CStyleRenderer &r) { return static_cast<CudaRenderer &>(r); }

  // The accumulators folding over `range`, each with its fold's lambda.
  std::vector<std::pair<UOpRef, std::string>> folds_over(const UOpRef &range) {
    std::vector<std::pair<UOpRef, std::string>> out;
    for (const UOpRef &x : program().uops) {
      if (x->op != Op::DefineAcc) continue;
      const UOpRef &fold = x->src[0];
      bool over = false;
      for (size_t i = 1; i < fold->src.size(); i++) over |= fold->src[i] == range;
      if (!over) continue;
      const std::string t = reg_type(fold->dtype);
      out.emplace_back(fold, "[](" + t + " a, " + t + " b) { return " +
                                 combine(fold->arg_as<uop::ReduceArg>().op, fold->dtype, "a", "b", false) + "; }");
    }
    return out;
  }

  // After a strided loop: each accumulator folding over it becomes the
  // block's total.
  std::string fold_group(const UOpRef &range) {
    std::string out;
    for (const auto &[fold, f] : folds_over(range))
      out += "\n" + name_of(fold) + " = loom_group_fold(" + name_of(fold) + ", " + f + ");";
    return out;
  }

  // A grouped scan's loop (Launch::scan): this thread's run of the line,
  // its loop body once without its stores (each accumulator then holds the
  // run's total), the block's exclusive scan of the totals, and the loop
  // opened again for the body as the program has it.
  std::string scan_runs(const UOpRef &range, const Rule &open) {
    const std::string r = "r" + std::to_string(range->arg_as<int64_t>()), n = std::to_string(trip(range));
    std::string text = "const int64_t " + r + "_run = (" + n + " + blockDim.x - 1) / blockDim.x, " + r +
                       "_lo = threadIdx.x * " + r + "_run < " + n + " ? threadIdx.x * " + r + "_run : " + n + ", " + r +
                       "_hi = " + r + "_lo + " + r + "_run < " + n + " ? " + r + "_lo + " + r + "_run : " + n + ";\n";
    const std::string head = "for (int64_t " + r + " = " + r + "_lo; " + r + " < " + r + "_hi; " + r + "++) {";
    open(*this, range);  // binds the loop variable
    text += head + "\n";
    const auto &uops = program().uops;
    size_t i = 0;
    while (uops[i] != range) i++;
    for (i++; !(uops[i]->op == Op::EndRange && uops[i]->src[0] == range); i++) {
      if (!uop::is_store(uops[i]->op)) text += "  " + statement(uops[i]) + "\n";
    }
    text += "}\n";
    for (const auto &[fold, f] : folds_over(range))
      text += name_of(fold) + " = loom_group_scan(" + name_of(fold) + ", (" + reg_type(fold->dtype) + ")" +
              acc_identity(fold) + ", " + f + ");\n";
    return text + head;
  }

  Launch launch_;
};

// The C prelude's own math functions (uop/ops.def's kPrelude rows) are
// CUDA's: loom_expf(x) is expf(x).
std::string prelude_math() {
  std::string s;
  for (const uop::OpInfo &o : uop::kOps)
    if (o.c == uop::OpInfo::kPrelude)
      s += std::string("__device__ __forceinline__ float loom_") + o.math + "f(float x) { return " + o.math + "f(x); }\n";
  return s;
}
}  // namespace

// What the kernels need of C's headers and the C prelude's helpers, under
// the same names: fixed-width integers, NAN and INFINITY, half conversions
// (PTX's cvt for float16; bfloat16 by its bits, as on the CPU), NaN-keeping
// max and min, integer pow, tensor-core steps, vector loads and stores, the
// block fold; the prelude's math functions are CUDA's (prelude_math). The
// emulator supplies its own half conversions, tensor-core steps and vector
// accesses (checked).
const std::string &cuda_prelude() {
  static const std::string s = R"(typedef signed char int8_t;
typedef unsigned char uint8_t;
typedef short int16_t;
typedef unsigned short uint16_t;
typedef int int32_t;
typedef unsigned int uint32_t;
typedef long long int64_t;
typedef unsigned long long uint64_t;
#define INT8_MIN (-128)
#define INT8_MAX 127
#define UINT8_MAX 255
#define INT16_MIN (-32768)
#define INT16_MAX 32767
#define INT32_MIN (-2147483647 - 1)
#define INT32_MAX 2147483647
#define INT64_MIN (-9223372036854775807LL - 1)
#define INT64_MAX 9223372036854775807LL
#define INFINITY __int_as_float(0x7f800000)
#define NAN __int_as_float(0x7fffffff)
#ifndef LOOM_CUDA_EMULATED
__device__ __forceinline__ float loom_h2f(uint16_t h) { float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); return f; }
__device__ __forceinline__ uint16_t loom_f2h(float f) { uint16_t h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h; }
/* Vector accesses: the address is a multiple of their size (codegen/vectorize.h). */
__device__ __forceinline__ float4 loom_ld4(const float *p) { return *(const float4 *)p; }
__device__ __forceinline__ void loom_st4(float *p, float4 v) { *(float4 *)p = v; }
__device__ __forceinline__ uint2 loom_ld8(const uint16_t *p) { return *(const uint2 *)p; }
__device__ __forceinline__ void loom_st8(uint16_t *p, uint2 v) { *(uint2 *)p = v; }
/* D = A B + D on tensor cores, one 16 x 8 x 16 step of a warp: a and b
   hold the lane's fragments (two halves per register, the lower element in
   the low bits), c its four float accumulators (PTX's mma.m16n8k16). */
__device__ __forceinline__ void loom_mma_f16(float *c, const uint32_t *a, const uint32_t *b) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
__device__ __forceinline__ void loom_mma_bf16(float *c, const uint32_t *a, const uint32_t *b) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
/* Shared-memory staging (sm_80): 16-byte asynchronous copies from global
   memory, the first `bytes` copied and the rest zero, complete at a wait
   for all but the newest n groups of copies a thread has committed; and
   ldmatrix, four 8 x 8 matrices of halves in one warp, lane r + 8 q giving
   the address of matrix q's row r (16 bytes), register q of lane 4 g + t
   holding its row g, columns 2t and 2t + 1 (transposed: rows 2t and
   2t + 1, column g), the lower element in the low bits. */
__device__ __forceinline__ uint32_t loom_smem(const void *p) {
  uint32_t a;
  asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
  return a;
}
__device__ __forceinline__ void loom_cp_async16(uint16_t *dst, const uint16_t *src, int bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(loom_smem(dst)), "l"(src), "r"(bytes) : "memory");
}
__device__ __forceinline__ void loom_cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
__device__ __forceinline__ void loom_cp_async_wait1() { asm volatile("cp.async.wait_group 1;" ::: "memory"); }
__device__ __forceinline__ void loom_cp_async_wait0() { asm volatile("cp.async.wait_group 0;" ::: "memory"); }
__device__ __forceinline__ void loom_ldsm_x4(uint32_t *r, const uint16_t *p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(loom_smem(p)) : "memory");
}
__device__ __forceinline__ void loom_ldsm_x4_trans(uint32_t *r, const uint16_t *p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(loom_smem(p)) : "memory");
}
#else
__device__ __forceinline__ void loom_mma_f16(float *c, const uint32_t *a, const uint32_t *b) { loom_emu_mma(c, a, b, 0); }
__device__ __forceinline__ void loom_mma_bf16(float *c, const uint32_t *a, const uint32_t *b) { loom_emu_mma(c, a, b, 1); }
#endif
__device__ __forceinline__ float loom_bf2f(uint16_t h) { return __uint_as_float((uint32_t)h << 16); }
__device__ __forceinline__ uint16_t loom_f2bf(float f) {
  uint32_t u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u); return (uint16_t)(u >> 16);
}
/* 4 halves in one 8-byte access, element 0 in the low bits, as float4. */
#define LOOM_HALF4(S, TO, FROM)                                                        \
  __device__ __forceinline__ float4 loom_ld4##S(const uint16_t *p) {                   \
    const uint2 r = loom_ld8(p);                                                       \
    return make_float4(TO((uint16_t)r.x), TO((uint16_t)(r.x >> 16)), TO((uint16_t)r.y), \
                       TO((uint16_t)(r.y >> 16)));                                     \
  }                                                                                    \
  __device__ __forceinline__ void loom_st4##S(uint16_t *p, float4 v) {                 \
    loom_st8(p, make_uint2((uint32_t)FROM(v.x) | (uint32_t)FROM(v.y) << 16,            \
                           (uint32_t)FROM(v.z) | (uint32_t)FROM(v.w) << 16));          \
  }
LOOM_HALF4(h, loom_h2f, loom_f2h)
LOOM_HALF4(bf, loom_bf2f, loom_f2bf)
__device__ __forceinline__ float loom_rh(float x) { return loom_h2f(loom_f2h(x)); }
__device__ __forceinline__ float loom_rbf(float x) { return loom_bf2f(loom_f2bf(x)); }
__device__ __forceinline__ float loom_maxf(float a, float b) { return (a != a || a > b) ? a : b; }
__device__ __forceinline__ float loom_minf(float a, float b) { return (a != a || a < b) ? a : b; }
__device__ __forceinline__ double loom_maxd(double a, double b) { return (a != a || a > b) ? a : b; }
__device__ __forceinline__ double loom_mind(double a, double b) { return (a != a || a < b) ? a : b; }
)" + prelude_math() + R"(__device__ inline int64_t loom_ipow(int64_t a, int64_t b) {
  if (b < 0) return a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0;
  uint64_t r = 1, x = (uint64_t)a;
  while (b) { if (b & 1) r *= x; x *= x; b >>= 1; }
  return (int64_t)r;
}
/* A block's fold of one value per thread, the same total in every thread:
   each warp folds by shuffles, warp 0's lane 0 .. warp n's partials fold in
   order from shared memory. */
template <typename T, typename F>
__device__ __forceinline__ T loom_group_fold(T v, F f) {
  __shared__ T part[32];
  for (int o = 16; o > 0; o >>= 1) v = f(v, __shfl_xor_sync(0xffffffffu, v, o));
  __syncthreads();
  if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = v;
  __syncthreads();
  v = part[0];
  for (unsigned w = 1; w < (blockDim.x >> 5); w++) v = f(v, part[w]);
  return v;
}
/* A block's exclusive scan of one value per thread, in thread order: what
   the threads before this one fold to (`identity` for thread 0), by
   doubling steps over shared memory. */
template <typename T, typename F>
__device__ __forceinline__ T loom_group_scan(T v, T identity, F f) {
  __shared__ T part[1024];
  __syncthreads();
  part[threadIdx.x] = v;
  __syncthreads();
  for (unsigned o = 1; o < blockDim.x; o <<= 1) {
    const T before = threadIdx.x >= o ? part[threadIdx.x - o] : identity;
    __syncthreads();
    if (threadIdx.x >= o) part[threadIdx.x] = f(before, part[threadIdx.x]);
    __syncthreads();
  }
  return threadIdx.x ? part[threadIdx.x - 1] : identity;
}
)";
  return s;
}

CudaKernel render_cuda(const codegen::KernelSpec &p) {
  if (p.library) return render_cuda_library(p);
  CudaRenderer r(p);
  std::string body = r.render(p);
  return {body, r.blocks(), r.threads()};
}

std::string cuda_param_decls(const codegen::KernelSpec &p) { return CudaRenderer(p).params(p); }

std::string render_cuda_values(const codegen::KernelSpec &p, const UOpRef &value,
                               const std::vector<std::pair<UOpRef, std::string>> &bound, const std::string &indent,
                               std::string &stored) {
  return CudaRenderer(p).render_values(p, value, bound, indent, stored);
}

std::vector<std::string> cuda_params(const std::string &source, const std::string &name) {
  const std::string head = "extern \"C\" __global__ void ";
  for (size_t at = source.find(head); at != std::string::npos; at = source.find(head, at + 1)) {
    const size_t open = source.find(" " + name + "(", at), eol = source.find('\n', at);
    if (open == std::string::npos || open > eol) continue;
    const size_t first = open + name.size() + 2, close = source.find(')', first);
    std::vector<std::string> params;
    for (size_t p = first; p < close;) {
      const size_t comma = std::min(source.find(',', p), close);
      params.push_back(source.substr(p, comma - p));
      p = comma + 1;
      while (p < close && source[p] == ' ') p++;
    }
    return params;
  }
  throw InternalError("CUDA kernel " + name + ": no signature in its source");
}

codegen::Target cuda_target() {
  codegen::Target t;
  t.block = false;  // the CPU's cache blocking
  // An elementwise thread computes 16 bytes of consecutive outputs (a float4
  // load and store where aligned), whole groups only: a tail would run in
  // its outer loops' threads. A reduction computes one output per thread.
  t.group_bytes = 16;
  t.group_tail = false;
  t.reduce_tiles = false;
  t.beam = false;
  t.vectors = codegen::Vectors::Memory;
  t.fma = false;  // the kernels compile with --fmad=false, as the emulator runs them
  t.sum_lanes = 1;  // a thread's sum is one running sum (the launch plan splits long ones across threads)
  t.tensor_cores = true;  // mma.m16n8k16: sm_80 and newer
  t.packed_gemm = false;  // the C template's; float32 GEMMs run as lowered loops (or cuBLAS)
  t.block_threads = 256;
  t.atomic_add = true;
  t.group_max_outputs = 4096;  // fewer outputs than this fill no GPU one thread each
  t.group_min_length = 256;    // every per-thread reduction nest at least this long
  return t;
}

}  // namespace loom::renderer
