// The on-disk compiled-kernel cache: one file per kernel, named by a hash of
// everything that determines it (source, flags, compiler identity); kernels
// compiled together share one object, each file a hard link to it. Writers go
// through a unique temporary and an atomic rename, so concurrent processes
// filling the same cache never see a half-written entry; a reader that finds an
// unusable entry deletes it and rebuilds.
#pragma once
#include <cstddef>
#include <functional>
#include <optional>
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
// Each cache file is the compiled object followed by a trailer naming the
// kernels it holds (one, or a batch compiled together and hard-linked under
// each of their names):
//   key(32 hex) per kernel, then "LOOM" content-hash(32 hex) size(16 hex) count(8 hex) "END\n"
// checked before the object is used: a loader would crash on a truncated
// object, and a file of another compiler or kernel must not be used.
std::string cache_trailer(const std::vector<std::string> &keys, const std::string &object);
// The object stored at `path` without its trailer, when the file exists, its
// trailer names `key` and matches the object; nullopt otherwise.
std::optional<std::string> read_cache_object(const std::string &path, const std::string &key);
// Publishes the finished file `tmp` under each path (a hard link each, a copy
// where the file system has none; atomic renames), then removes `tmp`.
// False when a path could not be written.
bool publish_cache_file(const std::string &tmp, const std::vector<std::string> &paths);
// The whole contents of a file; nullopt when it cannot be read.
std::optional<std::string> read_file(const std::string &path);
// Runs build(i) for each i in `which`, one worker per core; the first
// exception's message is rethrown as InternalError once all workers stop.
void build_parallel(const std::vector<size_t> &which, const std::function<void(size_t)> &build);
// Output of running argv (stdout and stderr) and its exit status; no shell.
struct ProcessResult {
  int status = -1;  // exit code, or -1 if the process could not run or was killed
  std::string output;
};
ProcessResult run_process(const std::vector<std::string> &argv);

}  // namespace loom::runtime
