#include "codegen/optimize.h"

#include <algorithm>
#include <string>

#include "uop/graph.h"

namespace loom::codegen {

using uop::Op;
using uop::UOp;

namespace {

constexpr int64_t kUnrollBytes = 64;
constexpr int64_t kReduceUpcast = 8, kReduceUpcast2 = 8;
constexpr int64_t kSmallAxis = 4, kMaxScalarAccumulators = 48;

// Loads one iteration of a tile makes: each load once per combination of the
// tile's amounts along the axes its address depends on.
int64_t loads_per_iteration(const std::vector<std::vector<bool>> &loads, const Upcast &tile) {
  int64_t n = 0;
  for (const auto &uses : loads) {
    int64_t k = 1;
    for (auto [axis, amount] : tile) k *= uses[static_cast<size_t>(axis)] ? amount : 1;
    n += k;
  }
  return n;
}

int64_t accumulators(const Upcast &tile) {
  int64_t n = 1;
  for (auto [axis, amount] : tile) n *= amount;
  return n;
}

Upcast sorted(Upcast tile) {
  std::sort(tile.begin(), tile.end());
  return tile;
}

// The tile of a kernel with one reduction: accumulators over one shared loop
// nest (independent chains instead of one, and each load made once for the
// elements it serves). Its first axis is the innermost output axis that
// kReduceUpcast divides, kReduceUpcast elements of it.
//  - That axis innermost: the group's stores (and loads that follow the
//    output) are adjacent, so the C compiler makes one vector of it; the
//    tile adds kReduceUpcast2 elements of the axis the most loads do not
//    depend on (a matmul's or a convolution's other operand), or, when none
//    and the axis is also the reduced input's innermost (a sum over an outer
//    axis, consecutive loads), widens to kReduceUpcast * kReduceUpcast2.
//  - Otherwise the accumulators are scalars, at most kMaxScalarAccumulators:
//    the tile with the fewest loads per accumulator among that axis with 4
//    of the most reused other axis, and each axis with 4 beside every small
//    axis (2 to kSmallAxis elements, a convolution's window) taken whole.
Upcast reduce_tile(const UOpRef &value, const Shape &shape, const UOp &reduce) {
  Upcast up;
  for (size_t d = shape.size(); d-- > 0 && up.empty();)
    if (shape[d] >= kReduceUpcast && shape[d] % kReduceUpcast == 0) up.push_back({static_cast<int64_t>(d), kReduceUpcast});
  if (up.empty()) return up;
  const int64_t first = up[0].first;
  const bool innermost = std::all_of(shape.begin() + first + 1, shape.end(), [](int64_t n) { return n == 1; });
  const int64_t amount = innermost ? kReduceUpcast2 : kReduceUpcast2 / 2;
  const std::vector<std::vector<bool>> loads = load_axes(value, shape);
  int64_t best = -1, best_reuse = 0;
  for (size_t d = shape.size(); d-- > 0;) {
    int64_t reuse = 0;
    for (const auto &uses : loads) reuse += !uses[d];
    if (static_cast<int64_t>(d) != first && shape[d] >= amount && shape[d] % amount == 0 && reuse > best_reuse) {
      best = static_cast<int64_t>(d);
      best_reuse = reuse;
    }
  }
  if (best >= 0) up.push_back({best, amount});
  else if (innermost && first + 1 == static_cast<int64_t>(uop::shape_of(reduce.src[0]).size()) &&
           shape[static_cast<size_t>(first)] % (kReduceUpcast * amount) == 0)
    up[0].second = kReduceUpcast * amount;
  if (innermost) return sorted(up);
  Upcast small;
  for (size_t d = 0; d < shape.size(); d++)
    if (shape[d] >= 2 && shape[d] <= kSmallAxis) small.push_back({static_cast<int64_t>(d), shape[d]});
  Upcast chosen = up;
  auto cost = [&](const Upcast &t) {
    return static_cast<double>(loads_per_iteration(loads, t)) / static_cast<double>(accumulators(t));
  };
  for (size_t d = 0; d < shape.size() && !small.empty(); d++) {
    if (shape[d] <= kSmallAxis || shape[d] % amount != 0) continue;
    Upcast t = small;
    t.push_back({static_cast<int64_t>(d), amount});
    if (accumulators(t) <= kMaxScalarAccumulators && cost(t) < cost(chosen)) chosen = t;
  }
  return sorted(chosen);
}

}  // namespace

Upcast optimize(const UOpRef &ast) {
  const UOpRef &store = ast->src[0];
  const UOpRef &value = store->src[1];
  const auto *write = std::get_if<uop::WriteArg>(&store->arg);
  if (write && (write->axis >= 0 || write->acc != Op::Sink)) return {};  // indexed or accumulating: serial, in order
  const Shape &shape = write ? uop::shape_of(value) : store->arg_as<shape::ShapeTracker>().shape();
  if (shape.empty()) return {};
  int64_t reduces = 0;
  UOpRef reduce;
  for (auto &x : uop::toposort(value)) {
    if (x->op == Op::Scan || x->op == Op::Sort) return {};
    if (x->op == Op::ReduceAxis) {
      reduces++;
      reduce = x;
    }
  }
  if (reduces == 0) {
    const int64_t u = kUnrollBytes / static_cast<int64_t>(itemsize(store->src[0]->dtype)), n = shape.back();
    if (u < 2 || n < u || n % u != 0) return {};
    return {{static_cast<int64_t>(shape.size()) - 1, u}};
  }
  if (reduces > 1 || write) return {};
  return reduce_tile(value, shape, *reduce);
}

std::string upcast_str(const Upcast &up) {
  std::string s = "upcast";
  if (up.empty()) s += " none";
  for (auto [axis, amount] : up) s += " axis " + std::to_string(axis) + " x" + std::to_string(amount);
  return s + "\n";
}

}  // namespace loom::codegen
