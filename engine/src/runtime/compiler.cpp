#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <sstream>
#include <unordered_map>

#include "loom/error.h"
#include "runtime/cpu.h"

namespace loom::runtime {

namespace {

// -fno-tree-loop-vectorize: GCC 12.2's -O2 loop vectorizer miscompiles a
// reduction over a loop nest whose index runs backwards (a flipped view summed:
// every element read once, the sum comes out wrong; correct at -O1, at -O3, and
// with this flag). The kernels will vectorize explicitly once codegen upcasts.
const char *kFlags =
    "-O2 -fno-tree-loop-vectorize -march=native -fPIC -shared -fwrapv -ffp-contract=off -fno-math-errno -std=gnu11";

std::string cache_dir() {
  static const std::string dir = [] {
    std::string d;
    if (const char *e = std::getenv("LOOM_CACHE_DIR"); e && *e) d = e;
    else if (const char *x = std::getenv("XDG_CACHE_HOME"); x && *x) d = std::string(x) + "/loom";
    else if (const char *h = std::getenv("HOME"); h && *h) d = std::string(h) + "/.cache/loom";
    else d = "/tmp/loom-cache";
    std::string cmd = "mkdir -p '" + d + "'";
    if (std::system(cmd.c_str()) != 0) throw Error("cannot create the kernel cache directory " + d);
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

bool file_exists(const std::string &p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0;
}

std::mutex g_mu;
std::unordered_map<std::string, void *> g_loaded;

}  // namespace

CompileResult compile_c(const std::string &source, const std::vector<std::string> &names) {
  std::lock_guard<std::mutex> lock(g_mu);
  CompileResult res;
  std::string key = hash_hex(std::string(kFlags) + "\n" + source);
  void *handle = nullptr;
  if (auto it = g_loaded.find(key); it != g_loaded.end()) handle = it->second;
  if (!handle) {
    std::string so = cache_dir() + "/" + key + ".so";
    if (!file_exists(so)) {
      // Unique temporaries, then an atomic rename: concurrent processes may compile the same kernel.
      static std::atomic<int> seq{0};
      std::string tmp = so + "." + std::to_string(getpid()) + "." + std::to_string(seq++);
      {
        std::ofstream f(tmp + ".c");
        f << source;
        if (!f) throw Error("cannot write kernel source " + tmp + ".c");
      }
      std::string cmd = "cc " + std::string(kFlags) + " -o '" + tmp + ".so' '" + tmp + ".c' -lm 2>'" + tmp + ".log'";
      int rc = std::system(cmd.c_str());
      if (rc != 0) {
        std::ifstream lf(tmp + ".log");
        std::stringstream log;
        log << lf.rdbuf();
        throw InternalError("C compiler failed (" + cmd + "):\n" + log.str() + "\nsource:\n" + source);
      }
      std::remove((tmp + ".c").c_str());
      std::remove((tmp + ".log").c_str());
      if (std::rename((tmp + ".so").c_str(), so.c_str()) != 0) throw Error("cannot move compiled kernel into " + so);
      res.compiled = true;
    }
    handle = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) throw InternalError(std::string("dlopen failed: ") + dlerror());
    g_loaded[key] = handle;
  }
  for (auto &n : names) {
    auto fn = reinterpret_cast<KernelFn>(dlsym(handle, n.c_str()));
    if (!fn) throw InternalError("kernel " + n + " missing from its shared object");
    res.fns.push_back(fn);
  }
  return res;
}

}  // namespace loom::runtime
