// cuBLAS's strided batched GEMM on the CPU, as its documentation defines it
// (column-major operands, op N or T, leading dimensions checked as cuBLAS
// checks them, float32 accumulation), so the emulator runs the CUDA device's
// extern GEMM calls unchanged: their transposes, leading dimensions, batch
// strides and offsets are what the result depends on.
#include <algorithm>
#include <cstdint>

#include "runtime/cuda/cublas.h"
#include "runtime/cuda/emulated_elements.h"
#include "runtime/cuda/emulator.h"

namespace loom::runtime::cuda {

namespace {

int g_handle;  // what the emulated cublasCreate hands out

bool supported_type(int t) { return t == kCudaR32F || t == kCudaR16F || t == kCudaR16BF; }

DType dtype(int type) { return type == kCudaR32F ? DType::Float32 : type == kCudaR16F ? DType::Float16 : DType::BFloat16; }
float read(const void *base, int type, int64_t i) { return load_float(base, dtype(type), i); }

int create(void **handle) {
  *handle = &g_handle;
  return 0;
}

int set_math_mode(void *handle, int) { return handle == &g_handle ? 0 : kCublasStatusNotInitialized; }

// C[i + j ldc] = alpha sum_l op(A)[i, l] op(B)[l, j] + beta C[i + j ldc]
// for each batch element p (A + p strideA, ...); C is not read when beta is 0.
int gemm(void *handle, int trans_a, int trans_b, int m, int n, int k, const void *alpha, const void *a, int a_type,
         int lda, long long stride_a, const void *b, int b_type, int ldb, long long stride_b, const void *beta,
         void *c, int c_type, int ldc, long long stride_c, int batch_count, int compute_type, int algo) {
  if (handle != &g_handle) return kCublasStatusNotInitialized;
  const bool ta = trans_a == kCublasOpT, tb = trans_b == kCublasOpT;
  if ((!ta && trans_a != kCublasOpN) || (!tb && trans_b != kCublasOpN) || m < 0 || n < 0 || k < 0 ||
      batch_count < 0 || lda < std::max(1, ta ? k : m) || ldb < std::max(1, tb ? n : k) || ldc < std::max(1, m))
    return kCublasStatusInvalidValue;
  if (compute_type != kCublasCompute32F || algo != kCublasGemmDefault || a_type != b_type ||
      !supported_type(a_type) || (c_type != a_type && c_type != kCudaR32F))
    return kCublasStatusNotSupported;
  const float al = *static_cast<const float *>(alpha), be = *static_cast<const float *>(beta);
  for (int64_t p = 0; p < batch_count; p++)
    for (int64_t j = 0; j < n; j++)
      for (int64_t i = 0; i < m; i++) {
        float s = 0;
        for (int64_t l = 0; l < k; l++) {
          const int64_t ia = p * stride_a + (ta ? l + i * lda : i + l * lda);
          const int64_t ib = p * stride_b + (tb ? j + l * ldb : l + j * ldb);
          s += read(a, a_type, ia) * read(b, b_type, ib);
        }
        const int64_t ic = p * stride_c + i + j * ldc;
        store_blended(c, dtype(c_type), ic, al * s, be);
      }
  return 0;
}

const char *status_string(int status) {
  switch (status) {
    case 0: return "CUBLAS_STATUS_SUCCESS";
    case kCublasStatusNotInitialized: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case kCublasStatusInvalidValue: return "CUBLAS_STATUS_INVALID_VALUE";
    case kCublasStatusNotSupported: return "CUBLAS_STATUS_NOT_SUPPORTED";
    default: return "CUBLAS_STATUS_UNKNOWN";
  }
}

}  // namespace

const CublasApi &emulated_cublas() {
  static const CublasApi api{create, set_math_mode, gemm, status_string};
  return api;
}

}  // namespace loom::runtime::cuda
