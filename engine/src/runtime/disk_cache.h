// The on-disk compiled-kernel cache: one file per kernel, named by a hash of
// everything that determines it (source, flags, compiler identity). Writers go
// through a unique temporary and an atomic rename, so concurrent processes
// filling the same cache never see a half-written entry; a reader that finds an
// unusable entry deletes it and rebuilds.
#pragma once
#include <string>
#include <vector>

namespace loom::runtime {

// LOOM_CACHE_DIR, else $XDG_CACHE_HOME/loom, else ~/.cache/loom; created on
// first use (std::filesystem, no shell).
const std::string &cache_dir();
// 32 hex digits of a 128-bit FNV-style hash.
std::string hash_hex(const std::string &s);
// A path in the cache directory no other process or thread uses.
std::string unique_temp_path(const std::string &final_path);
// Output of running argv (stdout and stderr) and its exit status; no shell.
struct ProcessResult {
  int status = -1;  // exit code, or -1 if the process could not run or was killed
  std::string output;
};
ProcessResult run_process(const std::vector<std::string> &argv);

}  // namespace loom::runtime
