#include "op_table.h"

#include <set>
#include <stdexcept>

namespace loom::conformance {

namespace dtypes {
const std::vector<DType> all(std::begin(kAllDTypes), std::end(kAllDTypes));
const std::vector<DType> no_bool = {DType::UInt8,   DType::Int8,     DType::Int16,   DType::Int32,  DType::Int64,
                                    DType::Float16, DType::BFloat16, DType::Float32, DType::Float64};
const std::vector<DType> floats = {DType::Float16, DType::BFloat16, DType::Float32, DType::Float64};
}  // namespace dtypes

bool OpEntry::supports(DType dt) const {
  for (DType d : dtypes)
    if (d == dt) return true;
  return false;
}

std::vector<DType> OpEntry::inputs_for(DType dt) const {
  if (input_dtypes) return input_dtypes(dt);
  return std::vector<DType>(static_cast<size_t>(arity), dt);
}

Domain default_domain(DType dt) {
  if (dt == DType::Bool) return {0, 1};
  if (dt == DType::UInt8) return {0, 9};
  if (!is_float(dt)) return {-9, 9};
  return {-4, 4};
}

Scalar random_scalar_for(DType dt, const Domain &d, Rng &rng) {
  const double v = draw_value(dt, d, rng);
  if (dt == DType::Bool) return Scalar(v != 0);
  if (!is_float(dt)) return Scalar(static_cast<long long>(v));
  return Scalar(v);
}

const std::vector<OpEntry> &op_table() {
  static const std::vector<OpEntry> table = [] {
    std::vector<OpEntry> t;
    add_elementwise_ops(t);
    add_reduce_ops(t);
    add_movement_ops(t);
    add_creation_ops(t);
    add_random_ops(t);
    add_integer_ops(t);
    add_nn_ops(t);
    add_index_ops(t);
    add_index_put_ops(t);
    for (OpEntry &e : t) e.strides = !e.view_op;
    std::set<std::string> names;
    for (const OpEntry &e : t)
      if (!names.insert(e.name).second) throw std::logic_error("op table: duplicate entry " + e.name);
    return t;
  }();
  return table;
}

const OpEntry *find_op(const std::string &name) {
  for (const OpEntry &e : op_table())
    if (e.name == name) return &e;
  return nullptr;
}

}  // namespace loom::conformance
