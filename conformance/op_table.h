// The op table: one entry per public Tensor op. The conformance properties,
// the sweep and the coverage report all read it, so a new op is tested
// everywhere by adding one entry here (and an op without one fails
// OpTable.EveryPublicOpHasAnEntry).
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "attrs.h"
#include "compare.h"
#include "gen.h"
#include "loom/tensor.h"

namespace loom::conformance {

using reference::Attrs;

// How the input shapes of a case relate to the case shape.
enum class ShapeKind : uint8_t {
  Same,       // every input has the case shape
  Broadcast,  // inputs broadcast to the case shape (size-1 dims, missing leading dims)
  None,       // no tensor inputs (creation ops): the case shape is the output shape
};

// What of the result is compared with the reference.
enum class Check : uint8_t {
  Values,      // shape, dtype, values within tolerance
  ShapeDtype,  // shape and dtype only (empty)
  Uniform01,   // no reference (rand): shape, dtype, values in [0, 1)
  Finite,      // no reference (randn): shape, dtype, finite values
  InRange,     // random values: shape, dtype, values in [attr low, attr high), integers if attr integral
  Permutation, // randperm: a permutation of 0 .. attr n - 1
};

// What the attribute and domain generators see of a case.
struct CaseContext {
  DType dtype;                        // the case dtype (the coverage column)
  Shape shape;                        // the case shape
  std::vector<HostTensor> inputs;     // geometry (and storage size) of each input; values not yet drawn
  // torch's view of each input after replaying its layout's steps: the storage
  // that as_strided addresses (the base buffer, or torch's copy after a flip),
  // as torch_view_info (torch_views.h) computes it without torch.
  std::vector<reference::ViewInfo> torch_views;
};

using EngineFn = std::function<Tensor(const std::vector<Tensor> &, const Attrs &)>;
using AttrGen = std::function<Attrs(const CaseContext &, Rng &)>;
using DomainFn = std::function<Domain(DType input_dtype, int input, const Attrs &)>;

struct OpEntry {
  std::string name;    // unique; "add" or "add_scalar" (the Scalar overload)
  std::string method;  // the Tensor method it covers
  int arity = 1;       // tensor inputs
  EngineFn engine;
  std::string ref_op;  // reference::run op name
  std::vector<DType> dtypes;  // supported case dtypes; for the rest the engine must throw loom::Error
  DomainFn domain;
  AttrGen attrs;  // may be empty: no attrs
  ShapeKind shapes = ShapeKind::Same;
  Check check = Check::Values;
  // Input dtypes for a case dtype (where: the condition is bool); empty = all the case dtype.
  std::function<std::vector<DType>(DType)> input_dtypes;
  // Inputs of unrelated shapes (gather's index, cat's pieces): the input shapes
  // for a case shape, drawn before the attrs (which then see them). Set, it
  // overrides `shapes`.
  std::function<std::vector<Shape>(const Shape &case_shape, Rng &rng)> shape_fn;
  int64_t max_numel = 64;   // case shapes are scaled down to this many elements
  bool reduction = false;   // atol grows with sqrt(elements reduced per output)
  // Elements reduced per output where it is not the first input's size over
  // the output's (a matmul: its inner dim, whatever the batch broadcasts to).
  std::function<double(const std::vector<HostTensor> &inputs)> reduced_per_output;
  // The terms reduced are products of inputs 0 and 1 (matmul, linear, conv):
  // atol grows with both inputs' magnitudes, not the larger one's.
  bool sum_of_products = false;
  // Where the result cancels large terms (batch_norm's x * alpha + beta with
  // alpha = weight / sqrt(var + eps), large for a channel of near-constant
  // values): the size of those terms, so that atol covers a rounding of them
  // (torch's own mean, summed in another order, is an ulp off).
  std::function<double(const std::vector<HostTensor> &inputs, const Attrs &attrs)> cancelled_terms;
  double tol_scale = 1;     // multiplies the dtype's default tolerance
  // Movement ops: the reference replays the input's layout steps and then this op
  // in torch, so as_strided addresses the storage torch would have (copies included).
  bool view_op = false;
  // Differentiable: the backward property and the sweep's backward column
  // compare d(sum(out * w))/d(input) with torch.autograd.grad for every
  // floating-point input (a float dtype case), and a float64 finite-difference
  // check runs on it.
  bool backward = false;
  double grad_tol_scale = 1;  // multiplies the gradient tolerance
  // The result's strides are compared with torch's (DESIGN 15), over the dims
  // of more than one element (a size-1 dim's stride places no element).
  bool strides = false;

  bool supports(DType dt) const;
  std::vector<DType> inputs_for(DType dt) const;
};

const std::vector<OpEntry> &op_table();
const OpEntry *find_op(const std::string &name);

// Per-area parts of the table (op_table_*.cpp).
void add_elementwise_ops(std::vector<OpEntry> &t);
void add_reduce_ops(std::vector<OpEntry> &t);
void add_movement_ops(std::vector<OpEntry> &t);
void add_creation_ops(std::vector<OpEntry> &t);
void add_random_ops(std::vector<OpEntry> &t);   // op_table_random.cpp
void add_integer_ops(std::vector<OpEntry> &t);  // op_table_integer.cpp
void add_nn_ops(std::vector<OpEntry> &t);       // op_table_nn.cpp: linear algebra, conv, pools, norms, activations, losses
void add_index_ops(std::vector<OpEntry> &t);    // op_table_index.cpp: indexing, shaping, scans, order, statistics
void add_index_put_ops(std::vector<OpEntry> &t);  // op_table_index_put.cpp: index lists, index_put

// Shared dtype sets and helpers for the table parts.
namespace dtypes {
extern const std::vector<DType> all, no_bool, floats;
}
Domain default_domain(DType dt);
// A scalar of the natural kind for dt (bool / int / float) drawn from d.
Scalar random_scalar_for(DType dt, const Domain &d, Rng &rng);

}  // namespace loom::conformance
