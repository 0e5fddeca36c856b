// NVRTC, the CUDA runtime compiler, loaded with dlopen on first use (no
// link-time dependency): CUDA C source -> a cubin for one GPU architecture.
#pragma once
#include <string>

namespace loom::runtime::cuda {

// Why NVRTC cannot be used here, naming what is missing; "" when it can.
const std::string &nvrtc_missing();
// NVRTC's version as "major.minor" (part of every compiled kernel's cache key).
const std::string &nvrtc_version();

struct NvrtcResult {
  bool ok = false;
  std::string log;    // the compiler's messages
  std::string cubin;  // the compiled kernel image, when ok
};
// Compiles one translation unit for `arch` ("sm_80", "sm_90", ...). Throws
// loom::Error when NVRTC is missing (nvrtc_missing()); a source that does
// not compile is a result with ok == false and the log.
NvrtcResult nvrtc_compile(const std::string &source, const std::string &file_name, const std::string &arch);

}  // namespace loom::runtime::cuda
