#include "runtime/cpu/blas.h"

#include <dlfcn.h>

#include <algorithm>
#include <climits>
#include <optional>
#include <string>
#include <utility>

#include "runtime/cpu/cpu.h"

namespace loom::runtime::cpu {

namespace {

// cblas_sgemm; CBLAS's enums are passed as ints.
using SgemmFn = void (*)(int order, int trans_a, int trans_b, int m, int n, int k, float alpha, const float *a,
                         int lda, const float *b, int ldb, float beta, float *c, int ldc);
constexpr int kRowMajor = 101, kNoTrans = 111, kTrans = 112;
using SetThreadsFn = void (*)(int);
using GetThreadsFn = int (*)();

struct OpenBlas {
  SgemmFn sgemm = nullptr;
  SetThreadsFn set_threads = nullptr;  // openblas_set_num_threads: absent, batches run one after another
  GetThreadsFn get_threads = nullptr;
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
    l.set_threads = reinterpret_cast<SetThreadsFn>(dlsym(h, "openblas_set_num_threads"));
    l.get_threads = reinterpret_cast<GetThreadsFn>(dlsym(h, "openblas_get_num_threads"));
    if (!l.get_threads) l.set_threads = nullptr;
    return l;
  }();
  return lib;
}

class SgemmProgram : public Program {
 public:
  SgemmProgram(SgemmFn fn, schedule::GemmShape g, int ta, int lda, int tb, int ldb)
      : fn_(fn), g_(std::move(g)), ta_(ta), tb_(tb), lda_(lda), ldb_(ldb) {}

  const char *library() const override { return "openblas sgemm"; }
  // Each sgemm call runs on one OpenBLAS thread, the pool's threads sharing
  // the calls: a batch of at least two per thread one GEMM each (small GEMMs,
  // a convolution's per image, leave OpenBLAS's threads waiting: hlb's 64 x
  // 256x225x576, 61 -> 304 GFLOP/s), else each GEMM's rows or columns cut
  // into one block per thread. OpenBLAS's own threads stay asleep: after a
  // call they spin for a while, taking the cores the next kernels run on.
  // Every element is then summed by a single-threaded sgemm call, whatever
  // the pool's threads (OpenBLAS on two threads sums otherwise).
  void launch(void **bufs, int64_t, bool parallel) const override {
    int64_t batches = 1;
    for (int64_t n : g_.batch) batches *= n;
    const OpenBlas &lib = openblas();
    const int threads = pool_threads();
    const Block whole{0, g_.m, 0, g_.n};
    if (!parallel || threads < 2 || !lib.set_threads) {
      for (int64_t i = 0; i < batches; i++) one(bufs, i, whole);
      return;
    }
    const int was = lib.get_threads();
    lib.set_threads(1);
    const bool by_batch = batches >= 2 * threads;
    parallel_run(threads, [&](int t) {
      const int64_t i0 = by_batch ? batches * t / threads : 0, i1 = by_batch ? batches * (t + 1) / threads : batches;
      const Block blk = by_batch ? whole : part(t, threads);
      for (int64_t i = i0; i < i1; i++) one(bufs, i, blk);
    });
    lib.set_threads(was);
  }

 private:
  struct Block {
    int64_t r0, r1, c0, c1;  // rows [r0, r1) and columns [c0, c1) of C
  };

  // Part t of `parts` of one GEMM: a run of rows where there are more rows
  // than columns, else of columns, cut at multiples of 16.
  Block part(int t, int parts) const {
    const bool by_rows = g_.m >= g_.n;
    const int64_t len = by_rows ? g_.m : g_.n, units = (len + 15) / 16;
    const int64_t lo = std::min(len, units * t / parts * 16), hi = std::min(len, units * (t + 1) / parts * 16);
    return by_rows ? Block{lo, hi, 0, g_.n} : Block{0, g_.m, lo, hi};
  }

  // Block `blk` of the batch's element i, its offsets from its row-major index.
  void one(void **bufs, int64_t i, const Block &blk) const {
    if (blk.r0 >= blk.r1 || blk.c0 >= blk.c1) return;
    const auto *a = static_cast<const float *>(bufs[g_.a.slot]) + g_.a.offset;
    const auto *b = static_cast<const float *>(bufs[g_.b.slot]) + g_.b.offset;
    auto *c = static_cast<float *>(bufs[0]) + i * g_.m * g_.n;
    int64_t oa = 0, ob = 0;
    for (int64_t d = static_cast<int64_t>(g_.batch.size()) - 1, rest = i; d >= 0; d--) {
      const auto sd = static_cast<size_t>(d);
      oa += rest % g_.batch[sd] * g_.a.batch_strides[sd];
      ob += rest % g_.batch[sd] * g_.b.batch_strides[sd];
      rest /= g_.batch[sd];
    }
    oa += blk.r0 * (ta_ == kNoTrans ? lda_ : 1);  // A's row r0
    ob += blk.c0 * (tb_ == kNoTrans ? 1 : ldb_);  // B's column c0
    const auto m = static_cast<int>(blk.r1 - blk.r0), n = static_cast<int>(blk.c1 - blk.c0), k = static_cast<int>(g_.k);
    fn_(kRowMajor, ta_, tb_, m, n, k, 1.0f, a + oa, lda_, b + ob, ldb_, 0.0f, c + blk.r0 * g_.n + blk.c0,
        static_cast<int>(g_.n));
  }

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
