// One differential case: build inputs in a layout, run the engine and the
// reference, compare. Shared by the properties and the sweep.
#pragma once
#include <string>
#include <vector>

#include "layouts.h"
#include "op_table.h"

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
  Unsupported,  // dtype outside the entry's set, and the engine rejected it with loom::Error
};
const char *outcome_name(Outcome o);

struct CaseResult {
  Outcome outcome = Outcome::Pass;
  std::string summary;  // one line (the coverage report's detail)
  std::string report;   // the full counterexample: op, dtype, shapes, layouts, strides, attrs, values
};

CaseResult run_case(const CaseSpec &spec);

// Cases are small: shapes are scaled down (largest dim first) to max_numel elements.
Shape clamp_numel(Shape s, int64_t max_numel);

}  // namespace loom::conformance
