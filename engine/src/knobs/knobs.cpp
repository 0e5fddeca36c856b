#include "knobs/knobs.h"

#include <algorithm>
#include <cstdlib>
#include <optional>

namespace loom::knobs {

namespace {

constexpr const char *kKnobs[] = {
    "LOOM_DEBUG",
    "LOOM_VIZ",
    "LOOM_CACHE_DIR",
    "LOOM_DEVICE",
    "LOOM_BEAM",
    "LOOM_EXTERN",
    "LOOM_GEMM_MIN_MACS",
    "LOOM_SPLIT_MIN_LENGTH",
    "LOOM_JIT",
    "LOOM_GRAPHS",
    "LOOM_NOOPT",
    "LOOM_THREADS",
    "LOOM_MARCH",
};
enum Index {
  Debug, Viz, CacheDir, Device, Beam, Extern, GemmMinMacs, SplitMinLength, Jit, Graphs, NoOpt, Threads, March, kCount
};
static_assert(std::size(kKnobs) == kCount, "one row per knob, in Index's order");

// The environment's value of every knob, read together on first use.
struct Values {
  std::optional<std::string> raw[kCount];
  Values() {
    for (int i = 0; i < kCount; i++)
      if (const char *e = std::getenv(kKnobs[i])) raw[i] = e;
  }
};
const std::optional<std::string> &raw(Index i) {
  static const Values values;
  return values.raw[i];
}
// The knob as an integer (atoll's reading of it), or `fallback` when unset.
int64_t integer(Index i, int64_t fallback) {
  const auto &v = raw(i);
  return v ? std::atoll(v->c_str()) : fallback;
}

}  // namespace

int debug() {
  static const int v = static_cast<int>(integer(Debug, 0));
  return v;
}
const std::string &viz() {
  static const std::string v = [] {
    const auto &e = raw(Viz);
    if (!e || e->empty() || *e == "0") return std::string();
    return *e == "1" ? std::string("loom_viz.json") : *e;
  }();
  return v;
}
const std::string &cache_dir() {
  static const std::string v = raw(CacheDir).value_or("");
  return v;
}
const std::string &device() {
  static const std::string v = raw(Device) && !raw(Device)->empty() ? *raw(Device) : "CPU";
  return v;
}
int beam() {
  static const int v = static_cast<int>(std::max<int64_t>(0, integer(Beam, 0)));
  return v;
}
// Read by the switches' initial values (which have setters), once each.
bool extern_gemm() { return integer(Extern, 1) != 0; }
int64_t gemm_min_macs() { return integer(GemmMinMacs, int64_t{1} << 22); }
int64_t split_min_length() { return integer(SplitMinLength, int64_t{1} << 15); }
bool jit() { return !(raw(Jit) && *raw(Jit) == "0"); }
bool graphs() { return raw(Graphs) && *raw(Graphs) == "1"; }
// Read by every schedule and kernel: parsed once.
bool noopt() {
  static const bool v = integer(NoOpt, 0) != 0;
  return v;
}

int threads() {
  static const int v = static_cast<int>(std::max<int64_t>(0, integer(Threads, 0)));
  return v;
}

const std::string &march() {
  static const std::string v = [] {
    const auto &e = raw(March);
    return e && !e->empty() ? *e : std::string("native");
  }();
  return v;
}

}  // namespace loom::knobs
