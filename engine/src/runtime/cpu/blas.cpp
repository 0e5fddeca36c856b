#include "runtime/cpu/blas.h"

#include <dlfcn.h>

#include <climits>
#include <optional>
#include <string>
#include <utility>

namespace loom::runtime::cpu {

namespace {

// cblas_sgemm; CBLAS's enums are passed as ints.
using SgemmFn = void (*)(int order, int trans_a, int trans_b, int m, int n, int k, float alpha, const float *a,
                         int lda, const float *b, int ldb, float beta, float *c, int ldc);
constexpr int kRowMajor = 101, kNoTrans = 111, kTrans = 112;

struct OpenBlas {
  SgemmFn sgemm = nullptr;
  std::string error;
};

const OpenBlas &openblas() {
  static const OpenBlas lib = [] {
    OpenBlas l;
    void *h = nullptr;
    for (const char *name : {"libopenblas.so.0", "libopenblas.so"})
      if ((h = dlopen(name, RTLD_NOW | RTLD_LOCAL))) break;
    if (!h) {
      const char *e = dlerror();
      l.error = std::string("cannot load libopenblas.so.0: ") + (e ? e : "unknown error");
      return l;
    }
    l.sgemm = reinterpret_cast<SgemmFn>(dlsym(h, "cblas_sgemm"));
    if (!l.sgemm) l.error = "libopenblas.so.0 has no cblas_sgemm";
    return l;
  }();
  return lib;
}

class SgemmProgram : public Program {
 public:
  SgemmProgram(SgemmFn fn, schedule::GemmShape g, int ta, int lda, int tb, int ldb)
      : fn_(fn), g_(std::move(g)), ta_(ta), tb_(tb), lda_(lda), ldb_(ldb) {}

  const char *library() const override { return "openblas sgemm"; }
  void launch(void **bufs, int64_t, bool) const override {
    const auto *a = static_cast<const float *>(bufs[g_.a.slot]) + g_.a.offset;
    const auto *b = static_cast<const float *>(bufs[g_.b.slot]) + g_.b.offset;
    auto *c = static_cast<float *>(bufs[0]);
    int64_t batches = 1;
    for (int64_t n : g_.batch) batches *= n;
    const auto m = static_cast<int>(g_.m), n = static_cast<int>(g_.n), k = static_cast<int>(g_.k);
    for (int64_t i = 0; i < batches; i++) {
      int64_t oa = 0, ob = 0;  // the batch element's offsets, from its row-major index
      for (int64_t d = static_cast<int64_t>(g_.batch.size()) - 1, rest = i; d >= 0; d--) {
        const auto sd = static_cast<size_t>(d);
        oa += rest % g_.batch[sd] * g_.a.batch_strides[sd];
        ob += rest % g_.batch[sd] * g_.b.batch_strides[sd];
        rest /= g_.batch[sd];
      }
      fn_(kRowMajor, ta_, tb_, m, n, k, 1.0f, a + oa, lda_, b + ob, ldb_, 0.0f, c + i * g_.m * g_.n, n);
    }
  }

 private:
  SgemmFn fn_;
  schedule::GemmShape g_;
  int ta_, tb_, lda_, ldb_;
};

}  // namespace

bool have_openblas(std::string *why) {
  if (why) *why = openblas().error;
  return openblas().sgemm != nullptr;
}

std::shared_ptr<const Program> sgemm_program(const schedule::GemmShape &g) {
  if (!have_openblas() || g.in != DType::Float32) return nullptr;
  for (int64_t d : {g.m, g.n, g.k})
    if (d < 1 || d > INT_MAX) return nullptr;
  const std::optional<schedule::BlasMatrix> a = schedule::blas_matrix(g.a, g.m, g.k);
  const std::optional<schedule::BlasMatrix> b = schedule::blas_matrix(g.b, g.k, g.n);
  if (!a || !b) return nullptr;
  auto op = [](const schedule::BlasMatrix &x) { return x.transposed ? kTrans : kNoTrans; };
  return std::make_shared<SgemmProgram>(openblas().sgemm, g, op(*a), a->ld, op(*b), b->ld);
}

}  // namespace loom::runtime::cpu
