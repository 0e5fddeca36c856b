// One differential case: build inputs in a layout, run the engine and the
// reference, compare. Shared by the properties and the sweep.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "layouts.h"
#include "op_table.h"
#include "reference.h"

namespace loom::conformance {

struct CaseSpec {
  const OpEntry *op = nullptr;
  DType dtype = DType::Float32;
  Shape shape;                  // the case shape (inputs may broadcast to it)
  std::vector<Layout> layouts;  // per input, cycled if shorter than the arity
  uint64_t seed = 0;            // drives input shapes, layouts' details, attrs and values
  // Overrides OpEntry::inputs_for(dtype) (mixed-dtype promotion cases); the
  // case dtype stays the coverage dtype.
  std::vector<DType> input_dtypes;
};

enum class Outcome : uint8_t {
  Pass,         // matches torch (or both reject the input)
  Fail,         // differs, or the engine crashed the contract (InternalError, wrong error)
  Gap,          // dtype outside the entry's set: torch accepts it, the engine rejects it
  Unsupported,  // dtype outside the entry's set: torch and the engine (loom::Error naming the dtype) both reject it
};
const char *outcome_name(Outcome o);

struct CaseResult {
  Outcome outcome = Outcome::Pass;
  std::string summary;  // one line (the coverage report's detail)
  std::string report;   // the full counterexample: op, dtype, shapes, layouts, strides, attrs, values
};

CaseResult run_case(const CaseSpec &spec);

// A case's inputs, drawn from its seed: layouts, attrs and values.
struct PreparedCase {
  std::shared_ptr<Rng> rng;  // continues the case's stream (later draws: weights, directions)
  std::vector<DType> in_dtypes;
  std::vector<LayoutInput> ins;
  std::vector<HostTensor> views;
  Attrs attrs;
  std::string header;  // the report's description of the case
};
// adjust_domain, when given, rewrites each input's value domain (the
// finite-difference check keeps values off grids, where functions have kinks).
PreparedCase prepare_case(const CaseSpec &spec, const std::function<Domain(Domain)> &adjust_domain = {});

// Some input of the case has negative strides: torch's input there is a
// flipped copy, whose strides (and its results' and gradients') are not the view's.
bool has_negative_layout(const CaseSpec &spec);
// torch's result for the case (view ops replay the input's steps, then the
// op, so as_strided sees torch's storage); nullopt, with torch's first error
// line in *error, when torch rejects the input.
// `strides`, when given, gets the strides of torch's result (not for view ops).
std::optional<HostTensor> torch_forward(const OpEntry &op, const PreparedCase &c, std::string *error = nullptr,
                                        std::vector<int64_t> *strides = nullptr);

// The backward case: backward() of sum(op(inputs) * w) for a random w in
// torch and in the engine; every floating-point input's .grad compared, its
// values and its strides.
CaseResult run_grad_case(const CaseSpec &spec);
// The sweep's backward cell where the table compares no gradient (an entry
// without backward, a dtype outside the entry, a non-floating dtype): Gap when
// torch differentiates the case, else Pass with the reason as the summary.
CaseResult probe_torch_gradient(const CaseSpec &spec);
// A float64 directional finite-difference check of the engine's gradient,
// independent of torch: (L(x + h v) - L(x - h v)) / 2h against grad . v.
CaseResult run_finite_difference_case(const CaseSpec &spec);

// Tolerance for comparing an op's result (or gradient) given its inputs.
Tolerance tolerance_for(const OpEntry &op, const HostTensor &want, const std::vector<HostTensor> &inputs,
                        const Attrs &attrs);
std::string first_line(const std::string &s);

// Runs `cases` once as a rehearsal (backends::compile_ahead: kernels gathered,
// not run; results are zeros and not checked), compiling the kernels they need
// in batches, before the caller runs them for real: the suites spend most of
// their time compiling kernels, several times faster in batches than one by
// one. LOOM_CONFORMANCE_COMPILE_AHEAD=0 skips it.
void compile_cases_ahead(const std::function<void()> &cases);
// Whether a compile_cases_ahead rehearsal is running (its cases fail nothing).
bool rehearsing();

// Cases are small: shapes are scaled down (largest dim first) to max_numel elements.
Shape clamp_numel(Shape s, int64_t max_numel);

}  // namespace loom::conformance
