#include "engine/beam.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "codegen/optimize.h"
#include "codegen/pipeline.h"
#include "engine/realize.h"
#include "knobs/knobs.h"
#include "runtime/device.h"
#include "runtime/disk_cache.h"

namespace loom::engine {

namespace {

// A kernel whose heuristic version runs faster than this keeps it.
constexpr double kWorthSearchingMs = 0.05;

std::string encode(const codegen::Upcast &up) {
  if (up.empty()) return "none";
  std::string s;
  for (auto [axis, amount] : up) s += (s.empty() ? "" : " ") + std::to_string(axis) + ":" + std::to_string(amount);
  return s;
}

std::optional<codegen::Upcast> decode(const std::string &text) {
  if (text == "none") return codegen::Upcast{};
  codegen::Upcast up;
  std::istringstream in(text);
  std::string part;
  while (in >> part) {
    const size_t colon = part.find(':');
    if (colon == std::string::npos) return std::nullopt;
    try {
      up.push_back({std::stoll(part.substr(0, colon)), std::stoll(part.substr(colon + 1))});
    } catch (...) {
      return std::nullopt;
    }
  }
  if (up.empty()) return std::nullopt;
  return up;
}

// The best of a few launches (at least 3, or 20 ms), after one to warm up.
double time_launch(const runtime::Program &prog, std::vector<void *> &ptrs, int64_t global, bool parallel) {
  prog.launch(ptrs.data(), global, parallel);
  double best = 1e300, spent = 0;
  for (int i = 0; i < 3 || (spent < 20 && i < 100); i++) {
    const double t0 = now_ms();
    prog.launch(ptrs.data(), global, parallel);
    const double ms = now_ms() - t0;
    best = std::min(best, ms);
    spent += ms;
  }
  return best;
}

}  // namespace

namespace {
std::atomic<int> g_beam_width{knobs::beam()};
}

int beam_width() { return g_beam_width.load(); }
int set_beam_width(int width) { return g_beam_width.exchange(std::max(0, width)); }

int64_t launch_global_size(const codegen::KernelSpec &p) {
  return p.global_range ? static_cast<int64_t>(p.global_range->src[0]->const_value()) : 1;
}
bool launch_parallel(const codegen::KernelSpec &p) { return p.iterations * std::max<int64_t>(1, p.alu_ops) >= (1 << 16); }

std::string beam_cache_file(const schedule::ScheduleItem &item, int n) {
  std::string key = item.ast->str() + "|beam " + std::to_string(n);
  for (DType d : schedule::buf_dtypes(item)) key += std::string(" ") + dtype_name(d);
  return runtime::cache_dir() + "/beam/" + runtime::hash_hex(key);
}

std::optional<codegen::Upcast> beam_upcast(const schedule::ScheduleItem &item) {
  const int n = beam_width();
  if (n < 2 || codegen::from_template(item, runtime::default_device().target())) return std::nullopt;
  const std::vector<codegen::Upcast> candidates = codegen::upcast_candidates(codegen::optimize_input(item.ast), static_cast<size_t>(n));
  if (candidates.size() < 2) return std::nullopt;

  // A cached choice, if it is one of today's candidates (else the entry is
  // stale or corrupt: it is timed again and rewritten).
  const std::string file = beam_cache_file(item, n);
  {
    std::ifstream in(file);
    std::string line;
    if (in && std::getline(in, line))
      if (auto up = decode(line); up && std::find(candidates.begin(), candidates.end(), *up) != candidates.end())
        return up;
  }

  // Scratch buffers of the kernel's sizes, every element 1: no NaN or
  // subnormal input slows a candidate down, no integer divisor is 0, and an
  // index is in range wherever the indexed axis is not empty.
  runtime::Device &dev = runtime::default_device();
  std::vector<std::shared_ptr<void>> scratch;
  std::vector<void *> ptrs;
  for (auto &b : item.bufs) {
    HostTensor ones = HostTensor::contiguous(b->dtype, {std::max<int64_t>(1, b->size)});
    for (int64_t i = 0; i < ones.numel(); i++) ones.set(i, 1);
    scratch.push_back(dev.allocate(ones.storage->size()));
    dev.copy_in(scratch.back().get(), ones.storage->data(), ones.storage->size());
    ptrs.push_back(scratch.back().get());
  }
  // The heuristic's first: a kernel that fast keeps it (the others' compile
  // time would not pay back); then the rest, compiled together.
  std::vector<codegen::KernelSpec> programs;
  std::vector<runtime::KernelSource> sources;
  for (const codegen::Upcast &up : candidates) {
    programs.push_back(codegen::kernel_spec(item, &up, dev.target()));
    sources.push_back(dev.source(programs.back()));
  }
  // Runtime scalars (the same for every candidate of one AST) hold 1 too.
  std::vector<uint64_t> one_vars;
  for (const uop::UOpRef &v : programs[0].vars) one_vars.push_back(uop::param_bits(v->dtype, {1.0, 1}));
  for (uint64_t &v : one_vars) ptrs.push_back(&v);
  auto time_all = [&](size_t from, size_t to, std::vector<double> &ms) {
    runtime::CompileStats cs;
    const auto compiled =
        dev.compile(std::vector<runtime::KernelSource>(sources.begin() + from, sources.begin() + to), cs);
    stats().kernels_compiled += cs.compiled;
    for (size_t i = from; i < to; i++)
      ms.push_back(
          time_launch(*compiled[i - from], ptrs, launch_global_size(programs[i]), launch_parallel(programs[i])));
  };
  std::vector<double> ms;
  time_all(0, 1, ms);
  if (ms[0] >= kWorthSearchingMs) time_all(1, candidates.size(), ms);
  const size_t best = static_cast<size_t>(std::min_element(ms.begin(), ms.end()) - ms.begin());
  if (debug_level() >= 1)
    std::fprintf(stderr, "beam %s: %zu of %zu candidates timed, the heuristic's %.3f ms, best %.3f ms (upcast %s)\n",
                 item.name.c_str(), ms.size(), candidates.size(), ms[0], ms[best], encode(candidates[best]).c_str());

  std::error_code ec;
  std::filesystem::create_directories(runtime::cache_dir() + "/beam", ec);
  const std::string tmp = runtime::unique_temp_path(file);
  {
    std::ofstream out(tmp);
    out << encode(candidates[best]) << "\n";
  }
  std::filesystem::rename(tmp, file, ec);  // atomic: readers see the old entry or the whole new one
  if (ec) std::filesystem::remove(tmp, ec);
  return candidates[best];
}

}  // namespace loom::engine
