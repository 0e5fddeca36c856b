// View algebra: a random chain of 1-6 movement ops on a random base (any
// dtype, any layout) gives element for element the tensor libtorch gives for
// the same chain. as_strided sees torch's storage of the step before it.
#include <gtest/gtest.h>

#include <sstream>

#include "harness.h"
#include "layouts.h"
#include "movement_gen.h"
#include "op_table.h"
#include "rc_support.h"

namespace loom::conformance {
namespace {

using reference::ViewStep;

constexpr int64_t kMaxChainNumel = 512;

void check_random_chain(bool as_strided_after_copies) {
  rc_check([as_strided_after_copies] {
    shrink_guard();
    const DType dt = kAllDTypes[*uniform_in<size_t>(0, std::size(kAllDTypes)).as("dtype index")];
    const int rank = *uniform_in<int>(0, 5).as("rank");
    const auto dims = *rc::gen::container<std::vector<int64_t>>(
                           static_cast<size_t>(rank), rc::gen::weightedElement<int64_t>({{4, 1}, {8, 2}, {6, 3}, {1, 0}, {3, 4}}))
                           .as("dims");
    const Layout layout = kAllLayouts[*uniform_in<size_t>(0, std::size(kAllLayouts)).as("layout index")];
    const int length = *uniform_in<int>(1, 7).as("chain length");
    const uint64_t seed = *uniform_in<uint64_t>(0, 1u << 30).as("seed");

    Rng rng(seed);
    LayoutInput in = plan_layout(layout, clamp_numel(Shape(dims.begin(), dims.end()), 48), dt, rng);
    fill_storage(in.base, default_domain(dt), rng);
    // Torch replays the layout's own steps first, so its storage is what the engine's is.
    std::vector<ViewStep> all = in.steps;
    random_chain(in.base, all, dt, length, as_strided_after_copies, kMaxChainNumel, rng);
    const std::vector<ViewStep> steps(all.begin() + static_cast<int64_t>(in.steps.size()), all.end());

    std::ostringstream rep;
    rep << "view chain on " << dtype_name(dt) << " base " << in.str() << "\n  base values " << values_str(in.view)
        << "\n  chain: x";
    for (const ViewStep &s : steps) rep << "." << s.str();
    const HostTensor want = reference::apply_view_chain(in.base, all);
    std::optional<std::string> bad;
    try {
      Tensor t = build_engine(in);
      for (const ViewStep &s : steps) t = apply_step(t, s);
      bad = compare(t.to_host(), want, {0, 0});
    } catch (const std::exception &e) {
      bad = std::string("the engine threw: ") + e.what();
    }
    if (bad) {
      fail_case(rep.str() + "\n  FAILED: " + *bad);
    }
  });
}

TEST(ViewAlgebra, RandomChainMatchesTorch) { check_random_chain(false); }

// as_strided after a torch copy addresses that copy (torch's storage), whatever
// views followed it: loom must track where torch would have copied.
TEST(ViewAlgebra, AsStridedAfterCopiesMatchesTorch) { check_random_chain(true); }

}  // namespace
}  // namespace loom::conformance
