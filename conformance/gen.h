// Random sources for the conformance suite: a seeded RNG (so a case is a
// function of its seed) and value domains for filling input storage.
#pragma once
#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "loom/host.h"

namespace loom::conformance {

class Rng {
 public:
  explicit Rng(uint64_t seed) : eng_(seed) {}
  int64_t uniform(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(eng_); }  // [lo, hi]
  double real(double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(eng_); }
  bool coin(double p = 0.5) { return real(0, 1) < p; }
  template <typename T>
  const T &pick(const std::vector<T> &v) { return v[static_cast<size_t>(uniform(0, static_cast<int64_t>(v.size()) - 1))]; }
  template <typename T>
  void shuffle(std::vector<T> &v) { std::shuffle(v.begin(), v.end(), eng_); }
  uint64_t next() { return eng_(); }

 private:
  std::mt19937_64 eng_;
};

// Where an input's values come from. Integers round into [lo, hi] (clamped to
// the dtype); bool is 0/1. `grid` > 0 puts floats on lo + k*grid so ties and
// exact equalities happen; `min_abs` keeps values away from 0 (divisors).
struct Domain {
  double lo = -4, hi = 4;
  double grid = 0;
  double zero_prob = 0;
  double min_abs = 0;
};

double draw_value(DType dt, const Domain &d, Rng &rng);
// Writes random values in `d` to every element of h's storage (not only the view).
void fill_storage(HostTensor &h, const Domain &d, Rng &rng);

using loom::shape_numel;  // from loom/host.h
using loom::row_major_strides;

}  // namespace loom::conformance
