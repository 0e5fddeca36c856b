// loom-demo: one lazy expression over strided views, realized once, checked
// against the same arithmetic done by hand in plain loops.
//
//   a = arange(24).reshape(4, 6)           contiguous buffer
//   t = a.T[::2, ::-1]                     permute, step-2 slice, negative-step slice
//   y = exp(relu(t + b) * -0.25)           b (4,) broadcast over the rows
//   out = y.sum(dim=1)                     shape (3,)
//
// Run with LOOM_DEBUG=2 (ci/demo.sh does) to see the kernels the engine runs.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <optional>
#include <vector>

#include "loom/tensor.h"

namespace {

constexpr int kRows = 4, kCols = 6;
const std::vector<double> kBias = {-12, 1, -20, 3};  // negatives make relu clip some entries

void show(const char *name, const loom::Tensor &t, const char *what) {
  std::printf("  %-4s %-10s %-8s %s\n", name, loom::shape_str(t.shape()).c_str(), loom::dtype_name(t.dtype()), what);
}

// The same computation without loom: follow each view back to the element of
// `a` it reads. t[r][c] = (a.T)[2r][3-c] = a[3-c][2r].
std::vector<float> expected() {
  float a[kRows][kCols];
  for (int i = 0; i < kRows; ++i)
    for (int j = 0; j < kCols; ++j) a[i][j] = static_cast<float>(i * kCols + j);
  std::vector<float> out(3, 0.0f);
  for (int r = 0; r < 3; ++r) {
    for (int c = 0; c < 4; ++c) {
      const float t = a[3 - c][2 * r];
      const float z = std::max(t + static_cast<float>(kBias[c]), 0.0f);
      out[r] += std::exp(z * -0.25f);
    }
  }
  return out;
}

int run() {
  using loom::Tensor;
  std::printf("building the graph (nothing runs yet):\n");
  const Tensor a = Tensor::arange(kRows * kCols, loom::DType::Float32).reshape({kRows, kCols});
  show("a", a, "arange(24).reshape(4, 6): source, then a view");
  const Tensor b = Tensor::from_vector(kBias, {4});
  show("b", b, "from_vector: a host copy");

  const Tensor p = a.permute({1, 0});
  show("p", p, "a.permute(1, 0): view, strides swapped");
  const Tensor s = p.slice(0, std::nullopt, std::nullopt, 2);
  show("s", s, "p[::2]: view, stride doubled");
  const Tensor t = s.slice(1, std::nullopt, std::nullopt, -1);
  show("t", t, "s[:, ::-1]: view, negative stride + offset");

  const Tensor y = ((t + b).relu() * -0.25).exp();
  show("y", y, "exp(relu(t + b) * -0.25): elementwise, b broadcast with stride 0");
  Tensor out = y.sum({1});
  show("out", out, "y.sum(1): reduction; the elementwise chain fuses into it");

  std::printf("realizing:\n");
  loom::reset_run_stats();
  out.realize();
  const loom::RunStats stats = loom::run_stats();
  std::printf("  %lld kernel(s) run, %lld buffer(s) allocated, %lld compiled\n",
              static_cast<long long>(stats.kernels_run), static_cast<long long>(stats.buffers_allocated),
              static_cast<long long>(stats.kernels_compiled));

  const loom::HostTensor got = out.to_host();
  const std::vector<float> want = expected();
  if (got.numel() != static_cast<int64_t>(want.size())) {
    std::printf("FAIL: result has %lld elements, expected %zu\n", static_cast<long long>(got.numel()), want.size());
    return 1;
  }
  std::printf("  %-3s %14s %14s\n", "i", "loom", "plain C++");
  bool ok = true;
  for (size_t i = 0; i < want.size(); ++i) {
    const double g = got.get(static_cast<int64_t>(i)), w = want[i];
    const bool close = std::fabs(g - w) <= 1e-5 + 1e-5 * std::fabs(w);
    ok = ok && close;
    std::printf("  %-3zu %14.7f %14.7f%s\n", i, g, w, close ? "" : "   <-- differs");
  }
  std::printf(ok ? "OK: loom agrees with the plain loops\n" : "FAIL: loom disagrees with the plain loops\n");
  return ok ? 0 : 1;
}

}  // namespace

int main() {
  // Line-buffered stdout: the engine's LOOM_DEBUG lines (stderr) then interleave in order when piped.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  try {
    return run();
  } catch (const std::exception &e) {
    std::fprintf(stderr, "loom-demo: %s\n", e.what());
    return 2;
  }
}
