#include "runtime/disk_cache.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <thread>

#include "knobs/knobs.h"
#include "loom/error.h"

extern char **environ;

namespace loom::runtime {

const std::string &cache_dir() {
  static const std::string dir = [] {
    std::string d;
    if (!knobs::cache_dir().empty()) d = knobs::cache_dir();
    else if (const char *x = std::getenv("XDG_CACHE_HOME"); x && *x) d = std::string(x) + "/loom";
    else if (const char *h = std::getenv("HOME"); h && *h) d = std::string(h) + "/.cache/loom";
    else d = "/tmp/loom-cache";
    std::error_code ec;
    std::filesystem::create_directories(d, ec);
    if (!std::filesystem::is_directory(d)) throw Error("cannot create the kernel cache directory " + d + ": " + ec.message());
    return d;
  }();
  return dir;
}

std::string hash_hex(const std::string &s) {
  uint64_t h = 0xcbf29ce484222325ull, h2 = 0x84222325cbf29ce4ull;
  for (unsigned char c : s) {
    h = (h ^ c) * 0x100000001b3ull;
    h2 = (h2 ^ c) * 0x100000001b3ull + 0x9e37;
  }
  char buf[40];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(h),
                static_cast<unsigned long long>(h2));
  return buf;
}

std::string unique_temp_path(const std::string &final_path) {
  static std::atomic<int64_t> seq{0};
  return final_path + ".tmp." + std::to_string(getpid()) + "." + std::to_string(seq++);
}

namespace {

constexpr size_t kKey = 32, kFooter = 4 + 32 + 16 + 8 + 4;

std::string hex(uint64_t v, int digits) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%0*llx", digits, static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace

std::string cache_trailer(const std::vector<std::string> &keys, const std::string &object) {
  std::string t;
  for (const std::string &k : keys) t += k;
  return t + "LOOM" + hash_hex(object) + hex(object.size(), 16) + hex(keys.size(), 8) + "END\n";
}

std::optional<std::string> read_file(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return std::nullopt;
  return std::string(std::istreambuf_iterator<char>(f), {});
}

std::optional<std::string> read_cache_object(const std::string &path, const std::string &key) {
  auto bytes = read_file(path);
  if (!bytes || bytes->size() < kFooter || key.size() != kKey) return std::nullopt;
  const std::string footer = bytes->substr(bytes->size() - kFooter);
  if (footer.compare(0, 4, "LOOM") != 0 || footer.compare(kFooter - 4, 4, "END\n") != 0) return std::nullopt;
  const uint64_t size = std::strtoull(footer.substr(36, 16).c_str(), nullptr, 16);
  const uint64_t count = std::strtoull(footer.substr(52, 8).c_str(), nullptr, 16);
  if (count == 0 || count > (bytes->size() - kFooter) / kKey || size != bytes->size() - kFooter - count * kKey)
    return std::nullopt;
  bool named = false;
  for (uint64_t i = 0; i < count && !named; ++i) named = bytes->compare(size + i * kKey, kKey, key) == 0;
  bytes->resize(size);
  if (!named || footer.compare(4, 32, hash_hex(*bytes)) != 0) return std::nullopt;
  return bytes;
}

bool publish_cache_file(const std::string &tmp, const std::vector<std::string> &paths) {
  bool ok = true;
  for (const std::string &path : paths) {
    // A unique name beside the final one, so the rename is atomic: readers see
    // the old file or the whole new one.
    const std::string link = unique_temp_path(path);
    std::error_code ec;
    std::filesystem::create_hard_link(tmp, link, ec);
    if (ec) std::filesystem::copy_file(tmp, link, ec);
    if (!ec) std::filesystem::rename(link, path, ec);
    if (ec) {
      std::filesystem::remove(link, ec);
      ok = false;
    }
  }
  std::error_code ec;
  std::filesystem::remove(tmp, ec);
  return ok;
}

void build_parallel(const std::vector<size_t> &which, const std::function<void(size_t)> &build) {
  if (which.empty()) return;
  const size_t workers = std::min<size_t>(which.size(), std::max(1u, std::thread::hardware_concurrency()));
  std::mutex mu;
  size_t next = 0;
  std::string error;
  auto work = [&] {
    for (;;) {
      size_t i;
      {
        std::lock_guard<std::mutex> l(mu);
        if (next >= which.size() || !error.empty()) return;
        i = which[next++];
      }
      try {
        build(i);
      } catch (const std::exception &ex) {
        std::lock_guard<std::mutex> l(mu);
        if (error.empty()) error = ex.what();
      }
    }
  };
  std::vector<std::thread> threads;
  for (size_t t = 1; t < workers; ++t) threads.emplace_back(work);
  work();
  for (auto &t : threads) t.join();
  if (!error.empty()) throw InternalError(error);
}

ProcessResult run_process(const std::vector<std::string> &argv) {
  ProcessResult res;
  int fds[2];
  if (pipe(fds) != 0) return res;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addclose(&actions, fds[0]);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 2);
  posix_spawn_file_actions_addclose(&actions, fds[1]);
  std::vector<char *> args;
  for (const auto &a : argv) args.push_back(const_cast<char *>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  if (rc == 0) {
    char buf[4096];
    ssize_t n;
    while ((n = read(fds[0], buf, sizeof buf)) > 0) res.output.append(buf, static_cast<size_t>(n));
    int wstatus = 0;
    while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
    }
    res.status = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1;
  } else {
    res.output = std::string("cannot run ") + argv[0] + ": " + std::strerror(rc);
  }
  close(fds[0]);
  return res;
}

}  // namespace loom::runtime
