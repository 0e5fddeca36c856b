// A child process for KernelCache.ConcurrentProcessesFillOneCache: realizes a
// fixed set of kernels (the same in every child) and checks their values.
// Exit status 0 when every value is right.
#include <cmath>
#include <cstdio>

#include "engine/testing/values.h"
#include "loom/tensor.h"

int main() {
  using namespace loom;
  int bad = 0;
  Tensor x = Tensor::arange(64, DType::Float32).reshape({8, 8}).realize();
  for (int k = 1; k <= 12; ++k) {
    const double c = 0.25 * k;
    HostTensor h = (x * testing::literal(c) + 1.0).sum({1}).to_host();  // 12 kernels
    for (int64_t i = 0; i < 8; ++i) {
      double want = 0;
      for (int64_t j = 0; j < 8; ++j) want += static_cast<double>(static_cast<float>(i * 8 + j) * static_cast<float>(c)) + 1;
      if (std::fabs(h.get(i) - want) > 1e-3 * std::fabs(want)) ++bad;
    }
  }
  if (bad) std::fprintf(stderr, "cache_child: %d wrong values\n", bad);
  return bad ? 1 : 0;
}
