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

// The tile of a kernel with one reduction: kReduceUpcast elements of the
// innermost output axis that group divides and, where another axis has
// loads that do not depend on it (a matmul's or a convolution's other
// operand), elements of that axis too: accumulators over one shared loop nest
// (independent chains instead of one, and each load made once for the
// elements it serves).
Upcast reduce_tile(const UOpRef &value, const Shape &shape, const UOp &reduce) {
  Upcast up;
  for (size_t d = shape.size(); d-- > 0 && up.empty();)
    if (shape[d] >= kReduceUpcast && shape[d] % kReduceUpcast == 0) up.push_back({static_cast<int64_t>(d), kReduceUpcast});
  if (up.empty()) return up;
  // Along the output's innermost axis the group's stores (and loads that
  // follow the output) are adjacent: the C compiler makes one vector of the
  // group, and a second axis of kReduceUpcast2 adds as many vector
  // accumulators. Otherwise the accumulators stay scalar: fewer, so they fit
  // in registers.
  const bool innermost = std::all_of(shape.begin() + up[0].first + 1, shape.end(), [](int64_t n) { return n == 1; });
  const int64_t amount = innermost ? kReduceUpcast2 : kReduceUpcast2 / 2;
  const std::vector<int64_t> reuse = loads_independent_of(value, shape);
  int64_t best = -1;
  for (size_t d = shape.size(); d-- > 0;)
    if (static_cast<int64_t>(d) != up[0].first && shape[d] >= amount && shape[d] % amount == 0 && reuse[d] > 0 &&
        (best < 0 || reuse[d] > reuse[static_cast<size_t>(best)]))
      best = static_cast<int64_t>(d);
  if (best >= 0) up.insert(best < up[0].first ? up.begin() : up.end(), {best, amount});
  // No axis to reuse loads along, and the tiled axis is the reduced input's
  // innermost (a sum over an outer axis, its loads consecutive along the
  // tile): as many vector accumulators along it instead. (Where the reduction
  // runs along the innermost input axis, each element of a wider tile would
  // stream its own row.)
  else if (innermost && up[0].first + 1 == static_cast<int64_t>(uop::shape_of(reduce.src[0]).size()) &&
           shape[static_cast<size_t>(up[0].first)] % (kReduceUpcast * amount) == 0)
    up[0].second = kReduceUpcast * amount;
  return up;
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
