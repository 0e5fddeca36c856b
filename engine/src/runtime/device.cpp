#include "runtime/device.h"

#include <chrono>
#include <cstdlib>
#include <string>

#include "knobs/knobs.h"
#include "loom/error.h"
#include "runtime/cpu/cpu.h"
#include "runtime/cuda/cuda.h"
#include "runtime/cuda/emulator.h"

namespace loom::runtime {

double Device::timed_launch(const Program &p, void **bufs, int64_t global_size, bool parallel) {
  synchronize();
  const auto t0 = std::chrono::steady_clock::now();
  p.launch(bufs, global_size, parallel);
  synchronize();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

Device &default_device() {
  static Device &d = []() -> Device & {
    const std::string &name = knobs::device();
    if (name == "CPU") return cpu::device();
    if (name == "CUDA") return cuda::device();  // throws, saying what is missing, where CUDA cannot run
    if (name == "CUDA_EMULATOR") return cuda::emulator();
    throw Error("LOOM_DEVICE=" + name + ": unknown device (available: CPU, CUDA, CUDA_EMULATOR)");
  }();
  return d;
}

std::string device_missing(const std::string &name) {
  if (name == "CPU") return "";
  if (name != "CUDA") return "no device named " + name + " (available: CPU, CUDA)";
  return cuda::missing();
}

}  // namespace loom::runtime
