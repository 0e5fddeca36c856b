// The CUDA device's extern GEMM: cuBLAS's cublasGemmStridedBatchedEx,
// loaded from libcublas with dlopen on first use (no link-time dependency,
// no CUDA headers). A canonical GEMM (schedule/gemm_shape.h) is row-major,
// C = A B; cuBLAS is column-major, so the call computes C^T = B^T A^T:
// cuBLAS's first operand is loom's B, its second loom's A, and its m and n
// are loom's n and m. float32 GEMMs compute in float32 without TF32 (as torch
// does by default); float16 and bfloat16 ones accumulate in float32 on
// tensor cores, rounded once to the output dtype.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/device.h"

namespace loom::runtime::cuda {

// The entry points loom calls, with cuBLAS's enums as ints and its handle as
// an opaque pointer; each returns a cublasStatus_t (0 = success).
struct CublasApi {
  int (*create)(void **handle);              // cublasCreate_v2
  int (*set_math_mode)(void *handle, int);   // cublasSetMathMode
  int (*gemm)(void *handle, int trans_a, int trans_b, int m, int n, int k, const void *alpha, const void *a,
              int a_type, int lda, long long stride_a, const void *b, int b_type, int ldb, long long stride_b,
              const void *beta, void *c, int c_type, int ldc, long long stride_c, int batch_count,
              int compute_type, int algo);  // cublasGemmStridedBatchedEx
  const char *(*status_string)(int);       // cublasGetStatusString
};

// cuBLAS's constants loom uses (cublas_api.h, library_types.h).
constexpr int kCublasOpN = 0, kCublasOpT = 1;
constexpr int kCudaR32F = 0, kCudaR16F = 2, kCudaR16BF = 14;
constexpr int kCublasCompute32F = 68, kCublasGemmDefault = -1;
constexpr int kCublasDefaultMath = 0, kCublasDisallowReducedPrecisionReduction = 16;
constexpr int kCublasStatusNotInitialized = 1, kCublasStatusInvalidValue = 7, kCublasStatusNotSupported = 15;
// Math mode for loom's handles: no reduced-precision accumulation in half
// GEMMs (float accumulators throughout, as loom's own kernels).
constexpr int kCublasMathMode = kCublasDefaultMath | kCublasDisallowReducedPrecisionReduction;

// libcublas's entry points; nullptr when it cannot be loaded or lacks one
// (the reason is cublas_missing()). Loaded once, thread-safe.
const CublasApi *cublas();
const std::string &cublas_missing();

// One canonical GEMM as cublasGemmStridedBatchedEx calls, in cuBLAS's terms
// (first operand `a` = loom's B, second `b` = loom's A): the innermost batch
// axes that one stride per operand walks are the call's batch; the others
// (`outer`, with each operand's element strides) are looped over, one call
// per outer index. C is row-major [batch..., m, n] in slot 0.
struct CublasGemm {
  int trans_a = kCublasOpN, trans_b = kCublasOpN;
  int m = 0, n = 0, k = 0, lda = 1, ldb = 1, ldc = 1;
  long long stride_a = 0, stride_b = 0, stride_c = 0;
  int batch = 1;
  int64_t a_slot = 0, b_slot = 0, a_offset = 0, b_offset = 0;  // element offsets
  std::vector<int64_t> outer, outer_a, outer_b;
  int in_type = kCudaR32F, out_type = kCudaR32F;
  size_t in_bytes = 4, out_bytes = 4;  // element sizes
};

// The calls for `g`; nullopt where cuBLAS cannot run it (an operand with no
// unit-stride dimension or a negative stride, a size past 2^31 - 1, an
// empty dimension).
std::optional<CublasGemm> cublas_gemm(const schedule::GemmShape &g);

// A program making those calls through `api` on `handle` (queued in order on
// the default stream); a failing call raises loom::Error naming its status.
std::shared_ptr<const Program> cublas_program(const CublasGemm &plan, const CublasApi &api, void *handle);

}  // namespace loom::runtime::cuda
