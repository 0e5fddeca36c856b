#include "renderer/cuda_library.h"

#include "loom/error.h"
#include "renderer/c_library.h"
#include "renderer/cuda_gemm.h"
#include "schedule/gemm_shape.h"
#include "uop/graph.h"

namespace loom::renderer {

using codegen::trip;
using uop::Op;
using uop::UOpRef;

namespace {

constexpr int64_t kSortThreads = 256;
// Lines of at least this many elements sort a block each, shorter ones a
// thread each.
constexpr int64_t kBlockSortMin = 512;

// The sort's macros: x before y (keys), the key of element k, and
// element k's position in the runs of half h (the low or the high 32 bits of
// the output's own element: no scratch memory).
std::string sort_macros(const SortLines &s) {
  return "#define LOOM_BEFORE(x, y) " + sort_before(s.dtype, s.descending) + "\n#define LOOM_KEY(k) (" +
         sort_key(s.dtype, "in[base + (int64_t)(k) * inner]") +
         ")\n#define LOOM_RUN(k, h) ((uint32_t)(out[base + (int64_t)(k) * inner] >> (32 * (h))))\n";
}

// A stable sort per line, NaN largest: positions merge-sorted bottom-up,
// each pass's runs in one 32-bit half of the output's elements and its
// merge written to the other (half 0 the low bits: CUDA GPUs are
// little-endian). A line's team of threads (a block per line, or one
// thread: a thread per line) splits each pass's positions into equal
// shares; a thread finds where its share starts in the two runs it merges
// from by a binary search along the merge path (the first m with
// B[d - 1 - m] before A[m], d the outputs before it), then merges.
std::string render_sort(const codegen::KernelSpec &p, const SortLines &s, bool block) {
  const std::string team = block ? "blockDim.x" : "1", rank = block ? "threadIdx.x" : "0",
                    barrier = block ? "  __syncthreads();\n" : "";
  return sort_macros(s) + "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(kSortThreads) + ") " +
         p.name + "(int64_t *__restrict__ out, const " + sort_mem_type(s.dtype) + " *__restrict__ in) {\n" +
         (block ? "  const int64_t line = blockIdx.x;\n"
                : "  const int64_t line = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;\n"
                  "  if (line >= " + std::to_string(trip(p.global_range)) + ") return;\n") +
         "  const int64_t n = " + std::to_string(s.n) + ", inner = " + std::to_string(s.inner) + ";\n"
         "  const int64_t base = (line / inner) * n * inner + line % inner;\n"
         "  const int64_t share = (n + " + team + " - 1) / " + team + ";\n"
         "  const int64_t a = " + rank + " * share < n ? " + rank + " * share : n, b = a + share < n ? a + share : n;\n"
         "  for (int64_t k = " + rank + "; k < n; k += " + team + ") out[base + k * inner] = k;\n" + barrier +
         "  int h = 0;  // the half holding the current runs\n"
         "  for (int64_t w = 1; w < n; w *= 2, h ^= 1) {\n"
         "    for (int64_t pos = a; pos < b;) {\n"
         "      const int64_t lo = pos / (2 * w) * (2 * w), mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;\n"
         "      const int64_t d = pos - lo, stop = b < hi ? b : hi;\n"
         "      int64_t m0 = d - (hi - mid) > 0 ? d - (hi - mid) : 0, m1 = d < mid - lo ? d : mid - lo;\n"
         "      while (m0 < m1) {\n"
         "        const int64_t m = (m0 + m1) / 2;\n"
         "        if (LOOM_BEFORE(LOOM_KEY(LOOM_RUN(mid + d - 1 - m, h)), LOOM_KEY(LOOM_RUN(lo + m, h)))) m1 = m;\n"
         "        else m0 = m + 1;\n"
         "      }\n"
         "      int64_t i = lo + m0, j = mid + d - m0;\n"
         "      for (; pos < stop; pos++) {\n"
         "        const bool right = i >= mid || (j < hi && LOOM_BEFORE(LOOM_KEY(LOOM_RUN(j, h)), LOOM_KEY(LOOM_RUN(i, h))));\n"
         "        ((uint32_t *)&out[base + pos * inner])[h ^ 1] = right ? LOOM_RUN(j++, h) : LOOM_RUN(i++, h);\n"
         "      }\n"
         "    }\n" + barrier +
         "  }\n"
         "  for (int64_t k = " + rank + "; k < n; k += " + team + ") out[base + k * inner] = LOOM_RUN(k, h);\n"
         "}\n#undef LOOM_BEFORE\n#undef LOOM_KEY\n#undef LOOM_RUN\n";
}

}  // namespace

CudaKernel render_cuda_library(const codegen::KernelSpec &p) {
  if (p.library->op == Op::Sort) {
    const SortLines s = sort_lines(p);
    LOOM_CHECK(s.n < (int64_t{1} << 31), "a sorted line longer than 2^31");
    const int64_t lines = trip(p.global_range);
    if (s.n >= kBlockSortMin) return {render_sort(p, s, true), lines, kSortThreads};
    return {render_sort(p, s, false), (lines + kSortThreads - 1) / kSortThreads, kSortThreads};
  }
  const std::shared_ptr<const schedule::GemmShape> &g = p.gemm;
  LOOM_CHECK(g && g->in != DType::Float32, "unknown library kernel " + p.name);
  return {render_cuda_gemm(p, *g), cuda_gemm_blocks(*g), kCudaGemmThreads};
}

}  // namespace loom::renderer
