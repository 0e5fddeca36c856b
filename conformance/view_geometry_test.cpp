// The op table's generators and replay learn torch's view geometry from
// torch_view_info, which models torch without linking it. Here the model is
// held to libtorch (reference::view_chain_info) on random movement chains over
// every layout: after each step, the same shape, strides, storage offset,
// storage size and base-or-copy; and where torch rejects a step, so does it.
#include <gtest/gtest.h>

#include <sstream>

#include "harness.h"
#include "layouts.h"
#include "movement_gen.h"
#include "rc_support.h"
#include "torch_views.h"

namespace loom::conformance {
namespace {

using reference::Attrs;
using reference::ViewInfo;
using reference::ViewStep;

constexpr int64_t kMaxChainNumel = 512;
constexpr double kCaseFraction = 10;  // geometry is cheap: 10x RapidCheck's case count

std::string info_str(const ViewInfo &v) {
  return shape_str(v.shape) + " strides " + shape_str(v.strides) + " offset " + std::to_string(v.offset) +
         " storage " + std::to_string(v.storage_numel) + (v.base_storage ? " (base)" : " (copy)");
}

// Torch's geometry, or its error (as "error: ...").
std::string with_torch(const HostTensor &base, const std::vector<ViewStep> &steps) {
  try {
    return info_str(reference::view_chain_info(base, steps));
  } catch (const std::runtime_error &e) {
    return std::string("error: ") + first_line(e.what());
  }
}
std::string without_torch(const HostTensor &base, const std::vector<ViewStep> &steps) {
  try {
    return info_str(torch_view_info(base, steps));
  } catch (const std::runtime_error &e) {
    return std::string("error: ") + first_line(e.what());
  }
}
bool is_error(const std::string &s) { return s.rfind("error: ", 0) == 0; }

// Nullopt when both agree (the same geometry, or both reject); else the report.
std::optional<std::string> disagreement(const LayoutInput &in, const std::vector<ViewStep> &steps) {
  const std::string want = with_torch(in.base, steps), got = without_torch(in.base, steps);
  if (want == got || (is_error(want) && is_error(got))) return std::nullopt;
  std::ostringstream rep;
  rep << "base " << in.str() << "\n  chain: x";
  for (size_t i = in.steps.size(); i < steps.size(); ++i) rep << "." << steps[i].str();
  rep << "\n  torch:      " << want << "\n  torch-free: " << got;
  return rep.str();
}

struct ChainStart {
  DType dtype;
  int length;
  Rng rng;  // continues after the layout's draws
  LayoutInput in;
};

// A random layout of a random base (any dtype, rank 0-4, size-0 and size-1
// dims), as in the view-algebra property.
ChainStart draw_start() {
  const DType dt = kAllDTypes[*uniform_in<size_t>(0, std::size(kAllDTypes)).as("dtype index")];
  const int rank = *uniform_in<int>(0, 5).as("rank");
  const auto size = rc::gen::weightedElement<int64_t>({{4, 1}, {8, 2}, {6, 3}, {1, 0}, {3, 4}});
  const auto dims = *rc::gen::container<std::vector<int64_t>>(static_cast<size_t>(rank), size).as("dims");
  const Layout layout = kAllLayouts[*uniform_in<size_t>(0, std::size(kAllLayouts)).as("layout index")];
  const int length = *uniform_in<int>(1, 9).as("chain length");
  ChainStart s{dt, length, Rng(*uniform_in<uint64_t>(0, 1u << 30).as("seed")), {}};
  s.in = plan_layout(layout, clamp_numel(Shape(dims.begin(), dims.end()), 48), dt, s.rng);
  return s;
}

void check_random_chains(bool as_strided_after_copies) {
  rc_check(
      [as_strided_after_copies] {
        shrink_guard();
        ChainStart s = draw_start();
        std::vector<ViewStep> steps = s.in.steps;
        random_chain(s.in.base, steps, s.dtype, s.length, as_strided_after_copies, kMaxChainNumel, s.rng);
        // Every prefix: the layout's own steps, then each step of the chain.
        for (size_t k = 0; k <= steps.size(); ++k) {
          const std::vector<ViewStep> prefix(steps.begin(), steps.begin() + static_cast<int64_t>(k));
          if (auto bad = disagreement(s.in, prefix)) {
            fail_case(*bad);
          }
        }
      },
      kCaseFraction);
}

TEST(ViewChainGeometry, MatchesTorchOnRandomChains) { check_random_chains(false); }

// as_strided after torch copied (flip, pad, negative slices, unviewable
// reshapes) addresses the copy, so the copy's strides and size must be torch's.
TEST(ViewChainGeometry, MatchesTorchAfterCopies) { check_random_chains(true); }

// Corners the random chains seldom reach: pads of channels-last 4-d and 5-d
// views (torch allocates in the suggested memory format, ambiguous size-1
// channels included), copies of broadcast and overlapping views, 0-d and
// empty tensors. Every prefix of every chain is compared.
TEST(ViewChainGeometry, MatchesTorchOnChosenChains) {
  auto step = [](const std::string &op, const std::string &key, std::vector<int64_t> v) {
    return ViewStep{op, Attrs().set_ints(key, v)};
  };
  const ViewStep contiguous{"contiguous", Attrs()};
  const std::vector<std::pair<Shape, std::vector<ViewStep>>> chains = {
      {{2, 4, 5, 3}, {step("permute", "order", {0, 3, 1, 2}), step("pad", "pad", {0, 0, 1, 0, 0, 1, 2, 0})}},
      {{2, 4, 5, 1}, {step("permute", "order", {0, 3, 1, 2}), step("pad", "pad", {0, 1, 1, 0, 0, 1, 2, 0})}},
      {{1, 1, 1, 3}, {step("permute", "order", {0, 3, 1, 2}), step("pad", "pad", {1, 0, 0, 0, 0, 1, 0, 0})}},
      {{2, 4, 5, 6, 3},
       {step("permute", "order", {0, 4, 1, 2, 3}), step("pad", "pad", {0, 0, 0, 1, 0, 0, 1, 1, 0, 0})}},
      {{2, 4, 5, 6, 3}, {step("permute", "order", {0, 4, 1, 2, 3}), step("flip", "dims", {1}), contiguous}},
      {{3, 1, 4}, {step("expand", "shape", {2, 3, 5, 4}), step("flip", "dims", {0}), step("reshape", "shape", {-1})}},
      {{3, 1, 4}, {step("expand", "shape", {3, 2, 4}), step("transpose", "dim0", {}), contiguous}},
      {{12}, {step("as_strided", "size", {3, 4}), step("reshape", "shape", {12}), contiguous}},
      {{}, {step("reshape", "shape", {1, 1}), step("expand", "shape", {2, 1, 3}), step("flip", "dims", {1}),
            step("pad", "pad", {0, 0, 1, 0, 0, 2})}},
      {{}, {step("expand", "shape", {2, 3}), contiguous, step("flip", "dims", {}), step("reshape", "shape", {})}},
      {{2, 0, 3}, {step("permute", "order", {2, 0, 1}), step("reshape", "shape", {0, 6}),
                   step("pad", "pad", {1, 1, 0, 0}), step("flip", "dims", {0})}},
  };
  for (const auto &[shape, chain] : chains) {
    Rng rng(1);
    const LayoutInput in = plan_layout(Layout::Contiguous, shape, DType::Float32, rng);
    std::vector<ViewStep> steps;
    for (ViewStep st : chain) {
      if (st.op == "as_strided") st.attrs.set_ints("stride", {2, 1}).set_int("offset", 1);
      if (st.op == "transpose") st.attrs = Attrs().set_int("dim0", 0).set_int("dim1", -1);
      steps.push_back(st);
      const auto bad = disagreement(in, steps);
      EXPECT_FALSE(bad) << *bad;
    }
  }
}

// Changes one int of the attrs to a value near the valid range, often out of it.
void perturb(Attrs &a, Rng &rng) {
  std::vector<std::string> keys;
  for (const auto &[k, v] : a.values)
    if (std::holds_alternative<int64_t>(v) || (std::holds_alternative<std::vector<int64_t>>(v) &&
                                               !std::get<std::vector<int64_t>>(v).empty()))
      keys.push_back(k);
  if (keys.empty()) return;
  const std::string &k = rng.pick(keys);
  int64_t lo = 0, hi = 8;  // size: negative sizes are not a question this test asks
  if (k == "dim" || k == "dims" || k == "order" || k == "dim0" || k == "dim1") lo = -6, hi = 6;
  else if (k == "start" || k == "stop" || k == "step") lo = -7, hi = 7;
  else if (k != "size") lo = -1;  // shape (-1 infers / keeps), stride, offset, pad, bounds
  const int64_t x = rng.uniform(lo, hi);
  if (auto *i = std::get_if<int64_t>(&a.values[k])) {
    *i = x;
  } else {
    auto &v = std::get<std::vector<int64_t>>(a.values[k]);
    v[static_cast<size_t>(rng.uniform(0, static_cast<int64_t>(v.size()) - 1))] = x;
  }
}

// Steps drawn without random_chain's filter, contiguous included, a third of
// them perturbed: both accept or both reject, and agree on what they accept.
TEST(ViewChainGeometry, RejectsWhatTorchRejects) {
  rc_check(
      [] {
        shrink_guard();
        ChainStart s = draw_start();
        std::vector<std::string> ops = movement_ops();
        ops.push_back("contiguous");
        std::vector<ViewStep> steps = s.in.steps;
        for (int i = 0; i < s.length; ++i) {
          const ViewInfo info = torch_view_info(s.in.base, steps);
          const ViewGeometry g{info.shape, s.dtype, info.offset, info.storage_numel};
          const std::string &op = s.rng.pick(ops);
          ViewStep step{op, movement_attrs(op, g, s.rng, kMaxChainNumel / 2)};
          if (s.rng.coin(1.0 / 3)) perturb(step.attrs, s.rng);
          steps.push_back(step);
          if (auto bad = disagreement(s.in, steps)) {
            fail_case(*bad);
          }
          try {  // go on from the accepted, small results
            if (shape_numel(torch_view_info(s.in.base, steps).shape) > kMaxChainNumel) steps.pop_back();
          } catch (const std::runtime_error &) {
            steps.pop_back();
          }
        }
      },
      kCaseFraction);
}

}  // namespace
}  // namespace loom::conformance
