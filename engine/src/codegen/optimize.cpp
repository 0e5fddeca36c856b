#include "codegen/optimize.h"

#include <algorithm>
#include <string>

#include "uop/graph.h"

namespace loom::codegen {

using uop::Op;
using uop::UOp;

namespace {

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


// What kind of kernel the optimize pass sees.
struct KernelShape {
  enum Kind { None, Elementwise, Reduce } kind = None;
  Shape shape;  // the output's
  UOpRef value, reduce;
  int64_t itemsize = 4;  // of the output
  bool write = false;    // stores through a view (a WRITE)
};

KernelShape kernel_shape(const UOpRef &ast) {
  KernelShape k;
  const UOpRef &store = ast->src[0];
  k.value = store->src[1];
  const auto *write = std::get_if<uop::WriteArg>(&store->arg);
  if (write && (write->axis >= 0 || write->acc)) return k;  // indexed or accumulating: serial, in order
  k.write = write != nullptr;
  k.shape = write ? uop::shape_of(k.value) : store->arg_as<shape::ShapeTracker>().shape();
  if (k.shape.empty()) return k;
  for (auto &x : uop::toposort(k.value))
    if (x->op == Op::Scan || x->op == Op::Sort) return k;
  const Reductions r = reductions(k.value, true);  // the short ones fold in registers: elementwise
  k.reduce = r.last;
  k.itemsize = static_cast<int64_t>(itemsize(store->src[0]->dtype));
  if (r.count == 0) k.kind = KernelShape::Elementwise;
  else if (r.one_input && !write) k.kind = KernelShape::Reduce;
  return k;
}

// The innermost axis (past size-1 ones) in groups of `bytes`, or of fewer (at
// least 4 elements) where the axis is shorter. Groups may leave a tail
// (lowerer.h: 15 x 15 = 14 * 16 + 1 merged, 24 * 31 * 31 = 1441 * 16 + 8),
// which runs inside the outer output loops: a kernel with none, one that
// writes through a view, or a target without tails takes dividing groups only.
Upcast group(const KernelShape &k, int64_t bytes, bool tails = true) {
  size_t axis = k.shape.size() - 1;  // the innermost axis over 1 element (size-1 axes have no loop)
  while (axis > 0 && k.shape[axis] == 1) axis--;
  const int64_t n = k.shape[axis];
  int64_t u = bytes / k.itemsize;
  const bool tail = tails && !k.write && std::any_of(k.shape.begin(), k.shape.begin() + static_cast<std::ptrdiff_t>(axis),
                                            [](int64_t d) { return d > 1; });
  while (tail && u > n && u > 4) u /= 2;
  if (u < 2 || n < u || (n % u != 0 && !tail)) return {};
  return {{static_cast<int64_t>(axis), u}};
}

// A float32 kernel evaluating exp, erf, log or tanh (GELU's gradient) whose
// group does not carry it (a pool's window broadcasts it; a 7-wide image row
// fits no group) computes a vector's worth of the innermost axis it depends
// on that one divides (the channels) per iteration, as the group's lanes:
// the functions, which cost the most, run on vectors; loads along that axis
// gather and stores scatter. A group that leaves a tail is dropped.
Upcast costly_lanes(const KernelShape &k, const Target &t, Upcast g) {
  if (t.vectors != Vectors::All || k.write || k.itemsize != 4) return g;
  const std::vector<bool> costly = costly_axes(k.value, k.shape);
  if (!g.empty() && costly[static_cast<size_t>(g.back().first)]) return g;
  const int64_t lanes = t.vector_bytes / k.itemsize;
  for (size_t d = k.shape.size(); d-- > 0;) {
    if (!costly[d] || k.shape[d] % lanes != 0 || (!g.empty() && g.back().first == static_cast<int64_t>(d))) continue;
    if (!g.empty() && k.shape[static_cast<size_t>(g.back().first)] % g.back().second != 0) g.clear();
    g.push_back({static_cast<int64_t>(d), lanes});
    return g;
  }
  return g;
}

}  // namespace

Upcast optimize(const UOpRef &ast, const Target &t) {
  const KernelShape k = kernel_shape(ast);
  if (k.kind == KernelShape::Elementwise && t.group_bytes > 0) return costly_lanes(k, t, group(k, t.group_bytes, t.group_tail));
  if (k.kind == KernelShape::Reduce && t.reduce_tiles) return reduce_tile(k.value, k.shape, *k.reduce);
  return {};
}

int64_t sum_lanes(const UOpRef &ast, const Upcast &up, const Target &t) {
  const KernelShape k = kernel_shape(ast);
  if (k.kind != KernelShape::Reduce || !splits_into_lanes(*k.reduce, t.sum_lanes)) return 1;
  // Terms computed in float64 would run per lane, each taken out of its
  // vector: slower than the upcast's lanes gathering them.
  for (auto &u : uop::toposort(k.reduce->src[0]))
    if (u->dtype == DType::Float64) return 1;
  // A term read along the upcast's innermost axis that also moves along the
  // reduction (a matmul's other operand; not a per-channel mean).
  // (An output of another rank than the reduction's input: any term read
  // along that axis.)
  const Shape &in = uop::shape_of(k.reduce->src[0]);
  const bool same_rank = in.size() == k.shape.size();
  if (!up.empty()) {
    const size_t axis = static_cast<size_t>(up.back().first);
    const auto &reduced = k.reduce->arg_as<uop::ReduceArg>().axes;
    for (const auto &s : same_rank ? load_strides(k.reduce->src[0], in) : load_strides(k.value, k.shape))
      if (s[axis] == 1 && (!same_rank || std::any_of(reduced.begin(), reduced.end(), [&](int64_t a) {
                             return s[static_cast<size_t>(a)] != 0;
                           })))
        return 1;
  }
  return lanes_load_consecutive(k.value, k.shape, t.sum_lanes) ? t.sum_lanes : 1;
}

std::vector<Upcast> upcast_candidates(const UOpRef &ast, size_t n) {
  const KernelShape k = kernel_shape(ast);
  if (k.kind == KernelShape::None) return {};
  std::vector<Upcast> out = {optimize(ast)};
  if (!out[0].empty()) out.push_back({});
  auto add = [&](Upcast u) {
    u = sorted(std::move(u));
    if (!u.empty() && std::find(out.begin(), out.end(), u) == out.end()) out.push_back(std::move(u));
  };
  if (k.kind == KernelShape::Elementwise) {
    for (int64_t bytes : {32, 128, 16}) add(group(k, bytes));
  } else {
    const std::vector<std::vector<bool>> loads = load_axes(k.value, k.shape);
    std::vector<std::pair<double, Upcast>> tiles;
    for (size_t a = 0; a < k.shape.size(); a++)
      for (int64_t x : {4, 8, 16}) {
        if (k.shape[a] % x != 0) continue;
        const Upcast one = {{static_cast<int64_t>(a), x}};
        tiles.push_back({static_cast<double>(loads_per_iteration(loads, one)) / x, one});
        for (size_t b = 0; b < k.shape.size(); b++)
          for (int64_t y : {2, 4, 8}) {
            if (b == a || k.shape[b] % y != 0 || x * y > 64) continue;
            const Upcast two = sorted({{static_cast<int64_t>(a), x}, {static_cast<int64_t>(b), y}});
            tiles.push_back({static_cast<double>(loads_per_iteration(loads, two)) / static_cast<double>(x * y), two});
          }
      }
    std::stable_sort(tiles.begin(), tiles.end(), [](auto &p, auto &q) { return p.first < q.first; });
    for (auto &t : tiles) add(t.second);
  }
  if (out.size() > n) out.resize(n);
  return out;
}



std::string upcast_str(const Upcast &up) {
  std::string s = "upcast";
  if (up.empty()) s += " none";
  for (auto [axis, amount] : up) s += " axis " + std::to_string(axis) + " x" + std::to_string(amount);
  return s + "\n";
}

}  // namespace loom::codegen
