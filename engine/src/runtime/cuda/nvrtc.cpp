#include "runtime/cuda/nvrtc.h"

#include <dlfcn.h>

#include <vector>

#include "loom/error.h"

namespace loom::runtime::cuda {

namespace {

// NVRTC's C API, declared here so the build needs no CUDA headers.
using Prog = void *;
struct Api {
  void *handle = nullptr;
  std::string missing, version;
  int (*version_fn)(int *, int *) = nullptr;
  int (*create)(Prog *, const char *, const char *, int, const char *const *, const char *const *) = nullptr;
  int (*compile)(Prog, int, const char *const *) = nullptr;
  int (*log_size)(Prog, size_t *) = nullptr;
  int (*log)(Prog, char *) = nullptr;
  int (*cubin_size)(Prog, size_t *) = nullptr;
  int (*cubin)(Prog, char *) = nullptr;
  int (*destroy)(Prog *) = nullptr;
  const char *(*error_string)(int) = nullptr;
};

template <typename F>
bool bind(Api &a, F &f, const char *sym) {
  f = reinterpret_cast<F>(dlsym(a.handle, sym));
  if (!f) a.missing = std::string("CUDA: libnvrtc has no ") + sym;
  return f != nullptr;
}

// The sonames tried in order: the unversioned development link, then the
// releases loom's kernels are written for.
const Api &api() {
  static const Api a = [] {
    Api a;
    std::string errors;
    for (const char *so : {"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12", "/usr/local/cuda/lib64/libnvrtc.so"}) {
      if ((a.handle = dlopen(so, RTLD_NOW | RTLD_LOCAL))) break;
      errors += std::string("\n  ") + dlerror();
    }
    if (!a.handle) {
      a.missing = "CUDA: NVRTC (libnvrtc.so) not found; install the CUDA toolkit:" + errors;
      return a;
    }
    if (!bind(a, a.version_fn, "nvrtcVersion") || !bind(a, a.create, "nvrtcCreateProgram") ||
        !bind(a, a.compile, "nvrtcCompileProgram") || !bind(a, a.log_size, "nvrtcGetProgramLogSize") ||
        !bind(a, a.log, "nvrtcGetProgramLog") || !bind(a, a.cubin_size, "nvrtcGetCUBINSize") ||
        !bind(a, a.cubin, "nvrtcGetCUBIN") || !bind(a, a.destroy, "nvrtcDestroyProgram") ||
        !bind(a, a.error_string, "nvrtcGetErrorString"))
      return a;
    int major = 0, minor = 0;
    a.version_fn(&major, &minor);
    a.version = std::to_string(major) + "." + std::to_string(minor);
    return a;
  }();
  return a;
}

void check(int status, const char *what) {
  if (status != 0) throw Error(std::string("CUDA: ") + what + " failed: " + api().error_string(status));
}

}  // namespace

const std::string &nvrtc_missing() { return api().missing; }
const std::string &nvrtc_version() { return api().version; }

NvrtcResult nvrtc_compile(const std::string &source, const std::string &file_name, const std::string &arch) {
  const Api &a = api();
  if (!a.missing.empty()) throw Error(a.missing);
  Prog prog = nullptr;
  check(a.create(&prog, source.c_str(), file_name.c_str(), 0, nullptr, nullptr), "nvrtcCreateProgram");
  // Floats as written (no contraction into FMAs), like the C target, so a
  // kernel's value does not depend on which target rendered it more than
  // the math functions make it.
  const std::string gpu = "--gpu-architecture=" + arch;
  const std::vector<const char *> opts{gpu.c_str(), "--fmad=false", "--std=c++17"};
  NvrtcResult r;
  r.ok = a.compile(prog, static_cast<int>(opts.size()), opts.data()) == 0;
  size_t n = 0;
  if (a.log_size(prog, &n) == 0 && n > 1) {
    r.log.resize(n);
    a.log(prog, r.log.data());
    r.log.resize(n - 1);
  }
  if (r.ok) {
    check(a.cubin_size(prog, &n), "nvrtcGetCUBINSize");
    r.cubin.resize(n);
    check(a.cubin(prog, r.cubin.data()), "nvrtcGetCUBIN");
  }
  a.destroy(&prog);
  return r;
}

}  // namespace loom::runtime::cuda
