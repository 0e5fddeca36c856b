// One RapidCheck property per op-table entry: random shapes (0-d, size-0 and
// size-1 dims, up to 6-d), every supported dtype, random layouts per input,
// random attrs; values, shape and dtype must match libtorch. Also forward and
// backward on larger shapes that the kernel optimizations tile.
#include <gtest/gtest.h>

#include "harness.h"
#include "rc_support.h"

namespace loom::conformance {
namespace {

std::vector<std::string> op_names() {
  std::vector<std::string> names;
  for (const OpEntry &e : op_table()) names.push_back(e.name);
  return names;
}

// Dims: mostly 1-3, sometimes 0 (empty tensors) or 4-5.
rc::Gen<int64_t> gen_dim() {
  return rc::gen::weightedElement<int64_t>({{5, 1}, {8, 2}, {6, 3}, {1, 0}, {3, 4}, {2, 5}});
}

class OpProperty : public ::testing::TestWithParam<std::string> {};

TEST_P(OpProperty, MatchesTorch) {
  const OpEntry &op = *find_op(GetParam());
  rc_check([&op] {
    shrink_guard();
    CaseSpec spec;
    spec.op = &op;
    spec.dtype = op.dtypes[*uniform_in<size_t>(0, op.dtypes.size()).as("dtype index")];
    const int rank = *uniform_in<int>(0, 7).as("rank");
    const auto dims = *rc::gen::container<std::vector<int64_t>>(static_cast<size_t>(rank), gen_dim()).as("dims");
    spec.shape = clamp_numel(Shape(dims.begin(), dims.end()), op.max_numel);
    const auto layouts = *rc::gen::container<std::vector<size_t>>(
                              static_cast<size_t>(op.arity), uniform_in<size_t>(0, std::size(kAllLayouts)))
                              .as("layout indices");
    for (size_t l : layouts) spec.layouts.push_back(kAllLayouts[l]);
    spec.seed = *uniform_in<uint64_t>(0, 1u << 30).as("seed");
    // A quarter of the broadcasting cases mix dtypes: torch's promotion decides the
    // result dtype (or both must reject, e.g. bool in sub).
    if (op.shapes == ShapeKind::Broadcast && *uniform_in<int>(0, 4).as("mix dtypes (0 = yes)") == 0) {
      spec.input_dtypes = op.inputs_for(spec.dtype);
      for (size_t i = 0; i < spec.input_dtypes.size(); ++i)
        if (*uniform_in<int>(0, 2).as("keep input dtype (0 = no)") == 0)
          spec.input_dtypes[i] = kAllDTypes[*uniform_in<size_t>(0, std::size(kAllDTypes)).as("input dtype index")];
    }
    const CaseResult r = run_case(spec);
    // The distribution printed after the run shows how many cases only checked a shared rejection.
    RC_TAG(r.summary.rfind("both reject", 0) == 0 ? "both reject" : "compared");
    if (r.outcome == Outcome::Fail) {
      fail_case(r.report);
    }
  });
}

INSTANTIATE_TEST_SUITE_P(Ops, OpProperty, ::testing::ValuesIn(op_names()),
                         [](const ::testing::TestParamInfo<std::string> &info) { return info.param; });

// Backward cases cost about three forward ones; a third as many keeps the suite's time in check.
constexpr double kGradCaseFraction = 0.3;

std::vector<std::string> differentiable_op_names(bool need_float64) {
  std::vector<std::string> names;
  for (const OpEntry &e : op_table())
    if (e.backward && (!need_float64 || e.supports(DType::Float64))) names.push_back(e.name);
  return names;
}

std::vector<DType> float_dtypes(const OpEntry &op) {
  std::vector<DType> out;
  for (DType dt : op.dtypes)
    if (is_float(dt)) out.push_back(dt);
  return out;
}

// Shapes whose dims are multiples of 8, 16 or 64, beside small ones: where the
// optimize pass (codegen/optimize.h) computes tiles of a reduction's outputs
// and 64-byte groups of elementwise ones, which the small shapes of the other
// properties rarely reach.
Shape tiled_shape(const OpEntry &op) {
  static const std::vector<Shape> shapes{{64},        {8, 8},     {16, 16},   {8, 64},  {3, 64},  {64, 3},
                                         {2, 8, 16},  {16, 3, 8}, {8, 8, 8},  {2, 3, 16}, {4, 128}, {16, 2, 2, 8}};
  // An entry that lowered max_numel below the default (products that must stay
  // representable, costly ops) keeps its limit; the others go to 16 times it.
  const int64_t limit = op.max_numel < OpEntry().max_numel ? op.max_numel : op.max_numel * 16;
  return clamp_numel(shapes[*uniform_in<size_t>(0, shapes.size()).as("tiled shape index")], limit);
}

CaseSpec random_spec(const OpEntry &op, const std::vector<DType> &dtypes, bool tiled = false) {
  CaseSpec spec;
  spec.op = &op;
  spec.dtype = dtypes[*uniform_in<size_t>(0, dtypes.size()).as("dtype index")];
  if (tiled) {
    spec.shape = tiled_shape(op);
  } else {
    const int rank = *uniform_in<int>(0, 5).as("rank");
    const auto dims = *rc::gen::container<std::vector<int64_t>>(static_cast<size_t>(rank), gen_dim()).as("dims");
    spec.shape = clamp_numel(Shape(dims.begin(), dims.end()), std::min<int64_t>(op.max_numel, 24));
  }
  const auto layouts = *rc::gen::container<std::vector<size_t>>(
                            static_cast<size_t>(op.arity), uniform_in<size_t>(0, std::size(kAllLayouts)))
                            .as("layout indices");
  for (size_t l : layouts) spec.layouts.push_back(kAllLayouts[l]);
  spec.seed = *uniform_in<uint64_t>(0, 1u << 30).as("seed");
  return spec;
}

// Inside a property: tags what the case did and fails it with its report.
void settle(const CaseResult &r) {
  RC_TAG(r.summary.empty() ? "compared" : "skipped: " + r.summary);
  if (r.outcome == Outcome::Fail) {
    fail_case(r.report);
  }
}

// The gradient of sum(op(x) * w) for a random w against torch.autograd.grad,
// every floating-point dtype of the entry, random layouts per input.
class GradProperty : public ::testing::TestWithParam<std::string> {};

TEST_P(GradProperty, MatchesTorch) {
  const OpEntry &op = *find_op(GetParam());
  rc_check([&op] {
    shrink_guard();
    settle(run_grad_case(random_spec(op, float_dtypes(op))));
  }, kGradCaseFraction);
}

INSTANTIATE_TEST_SUITE_P(Ops, GradProperty, ::testing::ValuesIn(differentiable_op_names(false)),
                         [](const ::testing::TestParamInfo<std::string> &info) { return info.param; });

// Forward and backward on tiled_shape's shapes, a tenth as many cases.
constexpr double kTiledCaseFraction = 0.1;

class TiledProperty : public ::testing::TestWithParam<std::string> {};

TEST_P(TiledProperty, ForwardMatchesTorch) {
  const OpEntry &op = *find_op(GetParam());
  rc_check([&op] {
    shrink_guard();
    settle(run_case(random_spec(op, op.dtypes, true)));
  }, kTiledCaseFraction);
}

INSTANTIATE_TEST_SUITE_P(Ops, TiledProperty, ::testing::ValuesIn(op_names()),
                         [](const ::testing::TestParamInfo<std::string> &info) { return info.param; });

class TiledGradProperty : public ::testing::TestWithParam<std::string> {};

TEST_P(TiledGradProperty, MatchesTorch) {
  const OpEntry &op = *find_op(GetParam());
  rc_check([&op] {
    shrink_guard();
    settle(run_grad_case(random_spec(op, float_dtypes(op), true)));
  }, kTiledCaseFraction * kGradCaseFraction);
}

INSTANTIATE_TEST_SUITE_P(Ops, TiledGradProperty, ::testing::ValuesIn(differentiable_op_names(false)),
                         [](const ::testing::TestParamInfo<std::string> &info) { return info.param; });

// Float64 directional finite differences against the engine's own gradient:
// independent of torch, so a rule that torch and loom got wrong alike shows here.
class FiniteDifference : public ::testing::TestWithParam<std::string> {};

TEST_P(FiniteDifference, AgreesWithAutograd) {
  const OpEntry &op = *find_op(GetParam());
  rc_check([&op] {
    shrink_guard();
    CaseSpec spec = random_spec(op, {DType::Float64});
    spec.layouts = {Layout::Contiguous};
    settle(run_finite_difference_case(spec));
  }, kGradCaseFraction);
}

INSTANTIATE_TEST_SUITE_P(Ops, FiniteDifference, ::testing::ValuesIn(differentiable_op_names(true)),
                         [](const ::testing::TestParamInfo<std::string> &info) { return info.param; });

}  // namespace
}  // namespace loom::conformance
