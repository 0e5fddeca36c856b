#include "knobs/knobs.h"

#include <algorithm>
#include <cstdlib>
#include <optional>

namespace loom::knobs {

namespace {

constexpr Knob kKnobs[] = {
    {"LOOM_DEBUG", "what realize prints: 1 per realize, 2 per kernel, 3 + source, 4 + AST and passes"},
    {"LOOM_VIZ", "1 (or a path): record every realize for the viewer, written at exit"},
    {"LOOM_CACHE_DIR", "where compiled kernels are cached"},
    {"LOOM_DEVICE", "CPU, CUDA or CUDA_EMULATOR"},
    {"LOOM_BEAM", "n: time up to n candidate upcasts per kernel and keep the fastest"},
    {"LOOM_EXTERN", "0: canonical GEMMs run as generated code, not on the GEMM library"},
    {"LOOM_GEMM_MIN_MACS", "the multiply-adds from which a GEMM-like kernel is split"},
    {"LOOM_SPLIT_MIN_LENGTH", "the elements per output from which a reduction is split"},
    {"LOOM_JIT", "0: every JIT call runs eagerly"},
    {"LOOM_NOOPT", "1: no kernel optimizations"},
};
enum Index { Debug, Viz, CacheDir, Device, Beam, Extern, GemmMinMacs, SplitMinLength, Jit, NoOpt, kCount };
static_assert(std::size(kKnobs) == kCount, "one row per knob, in Index's order");

// The environment's value of every knob, read together on first use.
struct Values {
  std::optional<std::string> raw[kCount];
  Values() {
    for (int i = 0; i < kCount; i++)
      if (const char *e = std::getenv(kKnobs[i].name)) raw[i] = e;
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

std::span<const Knob> all() { return kKnobs; }

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
bool extern_gemm() { return integer(Extern, 1) != 0; }
int64_t gemm_min_macs() { return integer(GemmMinMacs, int64_t{1} << 22); }
int64_t split_min_length() { return integer(SplitMinLength, int64_t{1} << 15); }
bool jit() { return !(raw(Jit) && *raw(Jit) == "0"); }
bool noopt() { return integer(NoOpt, 0) != 0; }

}  // namespace loom::knobs
