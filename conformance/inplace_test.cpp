// In-place updates under autograd, against libtorch: y = 2 * x, a random
// chain of movement ops makes v from y (a view where torch makes one, a copy
// where torch copies), v is overwritten with 3 * w, and the values of y and v
// and the gradients of sum(y * cy) + sum(v * cv) with respect to x and w must
// be torch's. This exercises CopySlices (the base's gradient through a write
// into its view), the views rebuilt after the write, and torch's refusal to
// write through a broadcast view.
#include <gtest/gtest.h>

#include <set>
#include <sstream>

#include "compare.h"
#include "layouts.h"
#include "loom/autograd.h"
#include "movement_gen.h"
#include "rc_support.h"
#include "reference.h"

namespace loom::conformance {
namespace {

using reference::ViewStep;

HostTensor random_host(const Shape &shape, DType dt, Rng &rng) {
  HostTensor h = HostTensor::contiguous(dt, shape);
  fill_storage(h, Domain{-2, 2}, rng);
  return h;
}

// Elements of the view that share one storage element while no dim is
// broadcast (only as_strided makes these): torch writes them in an
// unspecified order, so such cases are left out. Broadcast dims stay in: both
// must refuse them.
bool overlaps_without_broadcast(const reference::ViewInfo &v) {
  for (size_t d = 0; d < v.shape.size(); ++d)
    if (v.shape[d] > 1 && v.strides[d] == 0) return false;
  std::set<int64_t> seen;
  const int64_t n = shape_numel(v.shape);
  for (int64_t i = 0; i < n; ++i) {
    int64_t rest = i, at = v.offset;
    for (size_t d = v.shape.size(); d-- > 0;) {
      at += (rest % v.shape[d]) * v.strides[d];
      rest /= v.shape[d];
    }
    if (!seen.insert(at).second) return true;
  }
  return false;
}

// Loom's side of reference::run_inplace_case.
reference::InPlaceResult run_engine(const reference::InPlaceCase &c) {
  Tensor x = Tensor::from_host(c.x).requires_grad_();
  Tensor w = Tensor::from_host(c.w).requires_grad_();
  Tensor y = (c.base_requires_grad ? x : x.detach()).mul(2);
  Tensor v = y;
  for (const ViewStep &s : c.steps) v = apply_step(v, s);
  v.assign(w.mul(3));
  Tensor loss = y.mul(Tensor::from_host(c.cy)).sum().add(v.mul(Tensor::from_host(c.cv)).sum());
  auto g = autograd::grad({loss}, {x, w}, {}, /*allow_unused=*/true);
  return {y.to_host(), v.to_host(), g[0].to_host(), g[1].to_host()};
}

TEST(InPlace, WritesThroughViewsMatchTorchForwardAndBackward) {
  rc_check([] {
    shrink_guard();
    const DType dt = *rc::gen::element(DType::Float32, DType::Float64).as("dtype");
    const int rank = *uniform_in<int>(1, 4).as("rank");
    const auto dims = *rc::gen::container<std::vector<int64_t>>(static_cast<size_t>(rank), uniform_in<int64_t>(1, 5))
                           .as("dims");
    const int length = *uniform_in<int>(1, 4).as("chain length");
    const bool base_requires_grad = *rc::gen::weightedElement<bool>({{4, true}, {1, false}}).as("base requires grad");
    const uint64_t seed = *uniform_in<uint64_t>(0, 1u << 30).as("seed");

    Rng rng(seed);
    reference::InPlaceCase c;
    c.base_requires_grad = base_requires_grad;
    c.x = random_host(Shape(dims.begin(), dims.end()), dt, rng);
    random_chain(c.x, c.steps, dt, length, /*as_strided_after_copies=*/false, 64, rng);
    const reference::ViewInfo view = reference::view_chain_info(c.x, c.steps);
    RC_PRE(!overlaps_without_broadcast(view));
    c.w = random_host(view.shape, dt, rng);
    c.cy = random_host(c.x.shape, dt, rng);
    c.cv = random_host(view.shape, dt, rng);

    std::ostringstream rep;
    rep << dtype_name(dt) << " x " << shape_str(c.x.shape) << (base_requires_grad ? "" : " (y from x.detach())")
        << "\n  v = (2 * x)";
    for (const ViewStep &s : c.steps) rep << "." << s.str();
    rep << "; v.copy_(3 * w)";
    std::optional<reference::InPlaceResult> want, got;
    std::string torch_error, engine_error;
    try {
      want = reference::run_inplace_case(c);
    } catch (const std::runtime_error &e) {
      torch_error = e.what();
    }
    try {
      got = run_engine(c);
    } catch (const std::exception &e) {
      engine_error = e.what();
    }
    std::optional<std::string> bad;
    if (want.has_value() != got.has_value()) {
      bad = want ? "the engine threw: " + engine_error : "torch threw (" + torch_error + ") but the engine did not";
    } else if (want) {
      const Tolerance tol = default_tolerance(dt);
      const std::pair<const char *, std::pair<const HostTensor *, const HostTensor *>> parts[] = {
          {"y", {&got->y, &want->y}},
          {"v", {&got->v, &want->v}},
          {"grad x", {&got->grad_x, &want->grad_x}},
          {"grad w", {&got->grad_w, &want->grad_w}}};
      for (const auto &[name, pair] : parts)
        if (auto d = compare(*pair.first, *pair.second, tol); d && !bad) bad = std::string(name) + ": " + *d;
    }
    if (bad) {
      fail_case(rep.str() + "\n  FAILED: " + *bad);
    }
  });
}

}  // namespace
}  // namespace loom::conformance
