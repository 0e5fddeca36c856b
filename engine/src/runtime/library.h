// Entry points of a library loaded at run time with dlopen (the NVIDIA
// driver, cuBLAS, Open MPI, NCCL), so that a binary built here runs where
// the library is absent and says what is missing.
#pragma once
#include <dlfcn.h>

#include <initializer_list>
#include <string>

namespace loom::runtime {

// The first of `sonames` that loads (RTLD_NOW | RTLD_LOCAL), else nullptr,
// each failure's message appended to `errors`, a line each.
inline void *open_first(std::initializer_list<const char *> sonames, std::string &errors) {
  for (const char *so : sonames) {
    if (void *lib = dlopen(so, RTLD_NOW | RTLD_LOCAL)) return lib;
    const char *e = dlerror();
    errors += std::string("\n  ") + (e ? e : so);
  }
  return nullptr;
}

// Finds entry points by name in a loaded library. The first one it lacks
// becomes `missing`: "<library> has no <symbol><why>".
class Symbols {
 public:
  Symbols(void *lib, std::string library, std::string why = "")
      : lib_(lib), library_(std::move(library)), why_(std::move(why)) {}
  template <class F>
  void operator()(F &fn, const char *symbol) {
    fn = reinterpret_cast<F>(dlsym(lib_, symbol));
    if (!fn && missing.empty()) missing = library_ + " has no " + symbol + why_;
  }
  std::string missing;

 private:
  void *lib_;
  std::string library_, why_;
};

}  // namespace loom::runtime
