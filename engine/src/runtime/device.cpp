#include "runtime/device.h"

#include <cstdlib>
#include <string>

#include "loom/error.h"
#include "runtime/cpu/cpu.h"

namespace loom::runtime {

Device &default_device() {
  static Device &d = []() -> Device & {
    const char *e = std::getenv("LOOM_DEVICE");
    const std::string name = e && *e ? e : "CPU";
    if (name == "CPU") return cpu::device();
    throw Error("LOOM_DEVICE=" + name + ": unknown or unavailable device (available: CPU)");
  }();
  return d;
}

}  // namespace loom::runtime
