// Tests of the C target's prelude and templates: a C program (its source
// text) built with the kernels' flags at each x86-64 level this machine runs,
// and its output.
#pragma once
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "renderer/c_renderer.h"

namespace loom::renderer::testing {

// The -march flags to build with besides the kernels' own (""): each x86-64
// level this machine runs (16-, 32- and 64-byte vectors).
inline std::vector<std::string> marches_run_here() {
  std::vector<std::string> out{""};
#if defined(__x86_64__)
  for (const char *level : {"x86-64-v2", "x86-64-v3", "x86-64-v4"})
    if (machine_runs(level)) out.push_back(std::string("-march=") + level);
#endif
  return out;
}

struct CheckRun {
  bool built = false;
  int status = -1;     // the program's exit status once built
  std::string output;  // the compiler's when not built, else the program's
};

// Builds `source` with the kernels' flags (no auto-vectorization: scalar
// code stays scalar), -march replaced by `march` unless empty, and runs it.
inline CheckRun build_and_run(const std::string &source, const std::string &march) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("loom_c_check_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string src = (dir / "check.c").string(), exe = (dir / "check").string(), log = (dir / "log").string();
  std::ofstream(src) << source;
  auto read = [&] {
    std::stringstream ss;
    ss << std::ifstream(log).rdbuf();
    return ss.str();
  };
  std::string cmd = "cc";
  for (const std::string &f : c_flags()) cmd += " " + (f.rfind("-march=", 0) == 0 && !march.empty() ? march : f);
  CheckRun r;
  r.built = std::system((cmd + " " + src + " -o " + exe + " -lm > " + log + " 2>&1").c_str()) == 0;
  if (r.built) {
    const int status = std::system((exe + " > " + log + " 2>&1").c_str());
    r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  r.output = read();
  std::filesystem::remove_all(dir);
  return r;
}

}  // namespace loom::renderer::testing
