#include "machine.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <thread>
#include <vector>

namespace loom::bench {

std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  std::string line, model = "unknown CPU", isa = "no avx2";
  while (std::getline(f, line)) {
    if (line.rfind("model name", 0) == 0 && model == "unknown CPU") model = line.substr(line.find(':') + 2);
    if (line.rfind("flags", 0) == 0) {
      if (line.find(" avx512f") != std::string::npos) isa = "avx512f";
      else if (line.find(" avx2") != std::string::npos && isa != "avx512f") isa = "avx2";
    }
  }
  return model + " (" + isa + ")";
}

double copy_bandwidth_gbs(int threads) {
  const size_t bytes = size_t{64} << 20;
  std::vector<char> src(bytes, 1), dst(bytes, 0);
  threads = std::max(1, threads);
  double best = 0;
  for (int run = 0; run < 5; ++run) {
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        const size_t lo = bytes * t / threads, hi = bytes * (t + 1) / threads;
        std::memcpy(dst.data() + lo, src.data() + lo, hi - lo);
      });
    for (auto &t : pool) t.join();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::max(best, 2.0 * static_cast<double>(bytes) / s / 1e9);
  }
  return best;
}

}  // namespace loom::bench
