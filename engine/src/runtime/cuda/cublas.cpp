#include "runtime/cuda/cublas.h"

#include <dlfcn.h>

#include <climits>
#include <cstdint>
#include <cstdio>

#include "loom/error.h"
#include "runtime/library.h"

namespace loom::runtime::cuda {

namespace {

struct Loaded {
  CublasApi api{};
  std::string missing;  // "" when usable
};

// The sonames tried in order: the development link, then the releases whose
// ABI loom's declarations follow, then the toolkit's own copy.
Loaded load() {
  Loaded l;
  std::string errors;
  void *lib =
      open_first({"libcublas.so", "libcublas.so.13", "libcublas.so.12", "/usr/local/cuda/lib64/libcublas.so"}, errors);
  if (!lib) {
    l.missing = "CUDA: cuBLAS (libcublas.so) not found:" + errors;
    return l;
  }
  Symbols need(lib, "CUDA: libcublas");
  need(l.api.create, "cublasCreate_v2");
  need(l.api.set_math_mode, "cublasSetMathMode");
  need(l.api.gemm, "cublasGemmStridedBatchedEx");
  need(l.api.status_string, "cublasGetStatusString");
  l.missing = need.missing;
  return l;
}

const Loaded &loaded() {
  static const Loaded l = load();
  return l;
}

bool fits_int(int64_t v) { return v >= 0 && v <= INT_MAX; }

int cuda_type(DType dt) {
  switch (dt) {
    case DType::Float16: return kCudaR16F;
    case DType::BFloat16: return kCudaR16BF;
    default: return kCudaR32F;
  }
}

class CublasProgram : public Program {
 public:
  CublasProgram(CublasGemm plan, const CublasApi &api, void *handle) : p_(std::move(plan)), api_(api), handle_(handle) {}

  const char *library() const override { return "cublas gemm"; }

  // trans m n k, ld's, batch and outer calls, types, and each pointer's
  // power-of-two alignment in bytes (tensor-core kernels want 16).
  std::string describe(void **bufs) const override {
    auto align = [](const void *p, int64_t offset_bytes) {
      const auto v = reinterpret_cast<uintptr_t>(p) + static_cast<uintptr_t>(offset_bytes);
      return v == 0 ? 0 : static_cast<int>(v & (~v + 1));
    };
    int64_t calls = 1;
    for (int64_t n : p_.outer) calls *= n;
    char s[256];
    std::snprintf(s, sizeof s, "%c%c m=%d n=%d k=%d ld=%d,%d,%d batch=%d calls=%lld types=%d,%d align=%d,%d,%d",
                  p_.trans_a == kCublasOpT ? 'T' : 'N', p_.trans_b == kCublasOpT ? 'T' : 'N', p_.m, p_.n, p_.k, p_.lda,
                  p_.ldb, p_.ldc, p_.batch, static_cast<long long>(calls), p_.in_type, p_.out_type,
                  align(bufs[p_.a_slot], p_.a_offset * static_cast<int64_t>(p_.in_bytes)),
                  align(bufs[p_.b_slot], p_.b_offset * static_cast<int64_t>(p_.in_bytes)), align(bufs[0], 0));
    return s;
  }

  void launch(void **bufs, int64_t, bool) const override {
    const float alpha = 1.0f, beta = 0.0f;  // compute type float32: float scalars
    int64_t calls = 1;
    for (int64_t n : p_.outer) calls *= n;
    const auto *a = static_cast<const char *>(bufs[p_.a_slot]), *b = static_cast<const char *>(bufs[p_.b_slot]);
    auto *c = static_cast<char *>(bufs[0]);
    const auto c_call = static_cast<int64_t>(p_.batch) * p_.stride_c;  // C's elements per call
    for (int64_t i = 0; i < calls; i++) {
      int64_t oa = p_.a_offset, ob = p_.b_offset;  // the call's offsets, from its row-major outer index
      for (size_t d = p_.outer.size(), rest = static_cast<size_t>(i); d-- > 0;) {
        const auto x = static_cast<int64_t>(rest % static_cast<size_t>(p_.outer[d]));
        oa += x * p_.outer_a[d];
        ob += x * p_.outer_b[d];
        rest /= static_cast<size_t>(p_.outer[d]);
      }
      const int status = api_.gemm(handle_, p_.trans_a, p_.trans_b, p_.m, p_.n, p_.k, &alpha,
                                   a + oa * static_cast<int64_t>(p_.in_bytes), p_.in_type, p_.lda, p_.stride_a,
                                   b + ob * static_cast<int64_t>(p_.in_bytes), p_.in_type, p_.ldb, p_.stride_b, &beta,
                                   c + i * c_call * static_cast<int64_t>(p_.out_bytes), p_.out_type, p_.ldc,
                                   p_.stride_c, p_.batch, kCublasCompute32F, kCublasGemmDefault);
      if (status != 0) {
        const char *what = api_.status_string ? api_.status_string(status) : nullptr;
        throw Error("CUDA: cublasGemmStridedBatchedEx failed: " + std::string(what ? what : "status") + " (" +
                    std::to_string(status) + ")");
      }
    }
  }

 private:
  CublasGemm p_;
  const CublasApi &api_;
  void *handle_;
};

}  // namespace

const CublasApi *cublas() { return loaded().missing.empty() ? &loaded().api : nullptr; }
const std::string &cublas_missing() { return loaded().missing; }

std::optional<CublasGemm> cublas_gemm(const schedule::GemmShape &g) {
  for (int64_t d : {g.m, g.n, g.k})
    if (d < 1 || !fits_int(d)) return std::nullopt;
  // C^T (n x m) = B^T A^T: loom's B is cuBLAS's first operand.
  const std::optional<schedule::BlasMatrix> first = schedule::blas_matrix(g.b, g.k, g.n);
  const std::optional<schedule::BlasMatrix> second = schedule::blas_matrix(g.a, g.m, g.k);
  if (!first || !second) return std::nullopt;
  CublasGemm p;
  // A row-major matrix read as column-major is its transpose: a matrix
  // stored as loom's operand is read as cuBLAS's by no transpose.
  p.trans_a = first->transposed ? kCublasOpT : kCublasOpN;
  p.trans_b = second->transposed ? kCublasOpT : kCublasOpN;
  p.m = static_cast<int>(g.n), p.n = static_cast<int>(g.m), p.k = static_cast<int>(g.k);
  p.lda = first->ld, p.ldb = second->ld, p.ldc = p.m;
  p.a_slot = g.b.slot, p.a_offset = g.b.offset, p.b_slot = g.a.slot, p.b_offset = g.a.offset;
  p.stride_c = static_cast<long long>(g.m) * g.n;
  p.in_type = cuda_type(g.in), p.out_type = cuda_type(g.out);
  p.in_bytes = itemsize(g.in), p.out_bytes = itemsize(g.out);
  // The batch: axes of one element are dropped; from the innermost outward,
  // an axis joins the call's batch while each operand's stride for it is
  // its stride for the axes inside times their count (C's always is).
  std::vector<size_t> axes;
  for (size_t d = 0; d < g.batch.size(); d++) {
    if (g.batch[d] == 0) return std::nullopt;
    if (g.batch[d] != 1) axes.push_back(d);
  }
  if (axes.empty()) return p;
  const size_t last = axes.back();
  int64_t count = g.batch[last];
  p.stride_a = g.b.batch_strides[last], p.stride_b = g.a.batch_strides[last];
  size_t inner = axes.size() - 1;
  for (; inner > 0; inner--) {
    const size_t d = axes[inner - 1];
    if (g.b.batch_strides[d] != p.stride_a * count || g.a.batch_strides[d] != p.stride_b * count) break;
    count *= g.batch[d];
  }
  if (!fits_int(count) || p.stride_a < 0 || p.stride_b < 0) return std::nullopt;
  p.batch = static_cast<int>(count);
  for (size_t i = 0; i < inner; i++) {
    const size_t d = axes[i];
    if (g.a.batch_strides[d] < 0 || g.b.batch_strides[d] < 0) return std::nullopt;
    p.outer.push_back(g.batch[d]);
    p.outer_a.push_back(g.b.batch_strides[d]);
    p.outer_b.push_back(g.a.batch_strides[d]);
  }
  return p;
}

std::shared_ptr<const Program> cublas_program(const CublasGemm &plan, const CublasApi &api, void *handle) {
  return std::make_shared<CublasProgram>(plan, api, handle);
}

}  // namespace loom::runtime::cuda
