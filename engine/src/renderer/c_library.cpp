#include "renderer/c_library.h"

#include "loom/error.h"
#include "renderer/c_gemm.h"
#include "uop/graph.h"

namespace loom::renderer {

using uop::Op;

namespace {

// Keys compare in registers: halves as float, integers (and bool) as int64.
const char *key_type(DType d) {
  if (d == DType::Float64) return "double";
  return is_float(d) ? "float" : "int64_t";
}

}  // namespace

const char *sort_mem_type(DType d) {
  switch (d) {
    case DType::Bool: case DType::UInt8: return "uint8_t";
    case DType::Int8: return "int8_t";
    case DType::Int16: return "int16_t";
    case DType::Int32: return "int32_t";
    case DType::Int64: return "int64_t";
    case DType::Float16: case DType::BFloat16: return "uint16_t";
    case DType::Float32: return "float";
    case DType::Float64: return "double";
  }
  return "?";
}

std::string sort_key(DType d, const std::string &e) {
  if (d == DType::Float16) return "loom_h2f(" + e + ")";
  if (d == DType::BFloat16) return "loom_bf2f(" + e + ")";
  return "(" + std::string(key_type(d)) + ")" + e;
}

std::string sort_before(DType d, bool desc) {
  if (!is_float(d)) return desc ? "((x) > (y))" : "((x) < (y))";
  return desc ? "((x) > (y) || ((x) != (x) && (y) == (y)))" : "((x) < (y) || ((y) != (y) && (x) == (x)))";
}

SortLines sort_lines(const codegen::KernelSpec &p) {
  const uop::UOpRef &sort = p.library;
  const Shape &shape = uop::shape_of(sort);
  const auto &ra = sort->arg_as<uop::ReduceArg>();
  const auto axis = static_cast<size_t>(ra.axes.at(0));
  int64_t inner = 1;
  for (size_t i = axis + 1; i < shape.size(); ++i) inner *= shape[i];
  return {sort->src[0]->dtype, shape[axis], inner, ra.op == Op::Max};
}

namespace {

// Per line [start, end): keys gathered, positions merge-sorted bottom-up
// (taking from the right run only when strictly before: stable), NaN largest.
std::string render_sort(const codegen::KernelSpec &p) {
  const SortLines s = sort_lines(p);
  const DType dt = s.dtype;
  const std::string n = std::to_string(s.n), in = std::to_string(s.inner);
  const std::string before = sort_before(dt, s.descending);
  const std::string key = key_type(dt);
  return "#include <stdlib.h>\n#define LOOM_BEFORE(x, y) " + before + "\nvoid " + p.name +
         "(void **bufs, int64_t start, int64_t end) {\n"
         "  int64_t *restrict out = (int64_t *)bufs[0];\n"
         "  const " + sort_mem_type(dt) + " *restrict in = (const " + sort_mem_type(dt) + " *)bufs[1];\n"
         "  const int64_t n = " + n + ", inner = " + in + ";\n"
         "  " + key + " *key = (" + key + " *)malloc(sizeof(" + key + ") * n);\n"
         "  int64_t *bufa = (int64_t *)malloc(sizeof(int64_t) * n), *bufb = (int64_t *)malloc(sizeof(int64_t) * n);\n"
         "  if (!key || !bufa || !bufb) abort();\n"
         "  for (int64_t line = start; line < end; line++) {\n"
         "    const int64_t base = (line / inner) * n * inner + line % inner;\n"
         "    int64_t *a = bufa, *b = bufb;\n"
         "    for (int64_t k = 0; k < n; k++) { key[k] = " + sort_key(dt, "in[base + k * inner]") + "; a[k] = k; }\n"
         "    for (int64_t w = 1; w < n; w *= 2) {\n"
         "      for (int64_t lo = 0; lo < n; lo += 2 * w) {\n"
         "        const int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;\n"
         "        int64_t i = lo, j = mid, t = lo;\n"
         "        while (i < mid && j < hi) b[t++] = LOOM_BEFORE(key[a[j]], key[a[i]]) ? a[j++] : a[i++];\n"
         "        while (i < mid) b[t++] = a[i++];\n"
         "        while (j < hi) b[t++] = a[j++];\n"
         "      }\n"
         "      int64_t *s = a; a = b; b = s;\n"
         "    }\n"
         "    for (int64_t k = 0; k < n; k++) out[base + k * inner] = a[k];\n"
         "  }\n"
         "  free(key); free(bufa); free(bufb);\n"
         "}\n#undef LOOM_BEFORE\n";
}

}  // namespace

std::string render_c_library(const codegen::KernelSpec &p) {
  if (p.tiles.rows > 0) return render_c_gemm(p);
  LOOM_CHECK(p.library && p.library->op == Op::Sort, "unknown library kernel " + p.name);
  return render_sort(p);
}

}  // namespace loom::renderer
