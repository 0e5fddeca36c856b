// loom-replay: record | check | update | coverage — kernel snapshots of the corpus.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "corpus.h"
#include "engine/realize.h"
#include "op_table.h"
#include "renderer/cuda_renderer.h"
#include "runtime/cuda/nvrtc.h"
#include "snapshot.h"

namespace fs = std::filesystem;
using namespace loom::replay;

namespace {

const char *kUsage =
    "usage: loom-replay record [--dir DIR]   write every program's snapshot into DIR\n"
    "       loom-replay check  [--dir DIR]   compare with DIR; print diffs; exit 1 on any difference\n"
    "       loom-replay update [--dir DIR]   print the differences, then rewrite DIR\n"
    "       loom-replay coverage             exit 1 if an op-table entry has no program\n"
    "       loom-replay nvrtc [--arch A,B]   compile every kernel's CUDA source with NVRTC (default\n"
    "                                        sm_80,sm_90); exit 1 on any failure, 77 without NVRTC\n"
    "DIR defaults to the checked-in replay/snapshots.\n";

std::string read_file(const fs::path &p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Prints a diff per changed kernel and a summary; returns true when identical.
bool compare(const fs::path &dir) {
  int programs = 0, kernels = 0, changed = 0, added = 0, removed = 0, new_programs = 0, stale = 0;
  std::set<std::string> names;
  for (const Program &p : corpus()) {
    programs++;
    names.insert(p.name + ".txt");
    std::string now = snapshot(p);
    fs::path file = dir / (p.name + ".txt");
    auto cur = split_kernels(now);
    kernels += static_cast<int>(cur.size());
    if (!fs::exists(file)) {
      new_programs++;
      added += static_cast<int>(cur.size());
      std::cout << "new program " << p.name << " (" << cur.size() << " kernels, no snapshot)\n";
      continue;
    }
    std::string was = read_file(file);
    if (was == now) continue;
    auto old = split_kernels(was);
    for (size_t i = 0; i < std::max(old.size(), cur.size()); i++) {
      std::string label = p.name + " kernel " + std::to_string(i);
      if (i >= old.size()) added++;
      else if (i >= cur.size()) removed++;
      else if (old[i] != cur[i]) changed++;
      else continue;
      std::cout << unified_diff(i < old.size() ? old[i] : "", i < cur.size() ? cur[i] : "", "a/" + label,
                                "b/" + label);
    }
    if (old.empty() || cur.empty())  // errors and headers live outside kernels
      std::cout << unified_diff(was, now, "a/" + p.name, "b/" + p.name);
    else if (old == cur)
      std::cout << unified_diff(was, now, "a/" + p.name, "b/" + p.name);
  }
  if (fs::exists(dir))
    for (auto &e : fs::directory_iterator(dir))
      if (e.path().extension() == ".txt" && !names.count(e.path().filename().string())) {
        stale++;
        std::cout << "snapshot without a program: " << e.path().filename().string() << "\n";
      }
  bool same = changed + added + removed + new_programs + stale == 0;
  std::printf("replay: %d programs, %d kernels: %d changed, %d added, %d removed%s%s\n", programs, kernels, changed,
              added, removed, stale ? ", stale snapshots present" : "", same ? " (identical)" : "");
  return same;
}

void record(const fs::path &dir) {
  fs::create_directories(dir);
  std::set<std::string> names;
  for (const Program &p : corpus()) {
    names.insert(p.name + ".txt");
    std::ofstream(dir / (p.name + ".txt")) << snapshot(p);
  }
  for (auto &e : fs::directory_iterator(dir))
    if (e.path().extension() == ".txt" && !names.count(e.path().filename().string())) fs::remove(e.path());
  std::printf("replay: recorded %zu programs into %s\n", corpus().size(), dir.string().c_str());
}

int coverage() {
  std::set<std::string> covered;
  for (const Program &p : corpus()) covered.insert(p.op);
  int missing = 0;
  for (const auto &op : loom::conformance::op_table())
    if (!covered.count(op.name)) {
      std::cout << "op-table entry without a replay program: " << op.name << "\n";
      missing++;
    }
  std::printf("replay: %zu op-table entries, %d without a program\n", loom::conformance::op_table().size(), missing);
  return missing ? 1 : 0;
}

// Every distinct CUDA kernel of the corpus, compiled for each architecture.
int nvrtc(const std::vector<std::string> &archs) {
  namespace cuda = loom::runtime::cuda;
  if (!cuda::nvrtc_missing().empty()) {
    std::printf("replay nvrtc: skipped: %s\n", cuda::nvrtc_missing().c_str());
    return 77;
  }
  std::vector<std::pair<std::string, std::string>> units;  // (where, translation unit)
  std::set<std::string> seen;
  size_t kernels = 0;
  for (const Program &p : corpus()) {
    std::vector<loom::uop::UOpRef> outs;
    try {
      for (const loom::Tensor &t : p.build()) outs.push_back(t.contiguous().uop());
    } catch (const loom::Error &) {
      continue;  // a program whose building raises has no kernels (its snapshot records the error)
    }
    const auto ks = loom::engine::render(outs);
    for (size_t i = 0; i < ks.size(); i++) {
      kernels++;
      std::string unit = loom::renderer::cuda_prelude() + ks[i].cuda_source;
      if (seen.insert(unit).second) units.push_back({p.name + " kernel " + std::to_string(i), std::move(unit)});
    }
  }
  std::mutex mu;
  size_t next = 0, failed = 0;
  auto work = [&] {
    for (;;) {
      size_t i;
      {
        std::lock_guard<std::mutex> l(mu);
        if (next >= units.size() * archs.size()) return;
        i = next++;
      }
      const auto &[where, unit] = units[i / archs.size()];
      const std::string &arch = archs[i % archs.size()];
      const cuda::NvrtcResult r = cuda::nvrtc_compile(unit, "kernel.cu", arch);
      if (r.ok && r.cubin.empty()) throw std::runtime_error("NVRTC returned no cubin for " + where);
      if (r.ok) continue;
      std::lock_guard<std::mutex> l(mu);
      failed++;
      std::cout << "NVRTC failed (" << arch << "): " << where << "\n" << r.log << "\n" << unit.substr(loom::renderer::cuda_prelude().size()) << "\n";
    }
  };
  std::vector<std::thread> threads;
  for (unsigned t = 1; t < std::max(1u, std::thread::hardware_concurrency()); t++) threads.emplace_back(work);
  work();
  for (auto &t : threads) t.join();
  std::printf("replay nvrtc: NVRTC %s, %zu kernels, %zu distinct, %zu architectures: %zu failed\n",
              cuda::nvrtc_version().c_str(), kernels, units.size(), archs.size(), failed);
  return failed ? 1 : 0;
}

std::vector<std::string> split_commas(const std::string &s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string a; std::getline(ss, a, ',');)
    if (!a.empty()) out.push_back(a);
  return out;
}

}  // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    std::cerr << kUsage;
    return 2;
  }
  std::string cmd = argv[1];
  fs::path dir = fs::path(LOOM_SOURCE_DIR) / "replay" / "snapshots";
  std::vector<std::string> archs{"sm_80", "sm_90"};
  for (int i = 2; i < argc; i++) {
    std::string a = argv[i];
    if (a == "--dir" && i + 1 < argc) dir = argv[++i];
    else if (a == "--arch" && i + 1 < argc) archs = split_commas(argv[++i]);
    else {
      std::cerr << "loom-replay: unknown argument '" << a << "'\n" << kUsage;
      return 2;
    }
  }
  try {
    if (cmd == "record") record(dir);
    else if (cmd == "check") return compare(dir) ? 0 : 1;
    else if (cmd == "update") {
      compare(dir);
      record(dir);
    } else if (cmd == "coverage") return coverage();
    else if (cmd == "nvrtc") return nvrtc(archs);
    else {
      std::cerr << kUsage;
      return 2;
    }
  } catch (const std::exception &e) {
    std::cerr << "loom-replay: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
