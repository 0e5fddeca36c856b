#include "op_table.h"

#include <map>
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

// The ops whose result strides differ from torch's on some layout yet, and
// how torch lays them out (issue: results keep torch's memory layout). The
// sweep compares every other entry's strides; view ops' geometry is checked
// against torch's in ViewChainGeometry instead.
const char *strides_pending(const std::string &op) {
  static const char *const kHalfPool =
      "torch and loom keep a channels_last input's layout (every dtype and layout of the sweep agrees), but torch "
      "1.13 has no float16 pool on the CPU and the reference's float32 copy of an overlapping half input is "
      "laid out by sorting its strides, which can make it channels_last where torch's own decision would not";
  static const char *const kConv =
      "torch: channels_last where the input or weight suggests it (suggest_memory_format); loom: row-major";
  static const std::map<std::string, const char *> pending = {
      {"conv2d", kConv},
      {"conv2d_nobias", kConv},
      {"max_pool2d", kHalfPool},
      {"avg_pool2d", kHalfPool},
      {"adaptive_avg_pool2d", "torch: the input's suggested memory format (channels_last kept); loom: row-major"},
      {"batch_norm", "the reference runs torch on a row-major copy of the input (torch 1.13's backward is wrong "
                     "for channels_last), so its strides are not torch's; torch and loom keep a channels_last "
                     "input's layout"},
      {"sort_values", "torch: laid out as the input; loom: row-major"},
      {"sort_indices", "as sort_values"},
      {"argsort", "as sort_values"},
      {"topk_values", "torch: laid out as the input in some cases (seen: k the dim's size); loom: row-major"},
      {"index_put", "torch: a clone of the input that keeps its strides; loom: row-major"},
      {"index_put_accumulate", "as index_put"},
      {"index_put_mask", "as index_put"},
      {"index_put_pair", "as index_put"},
      {"masked_fill", "as index_put (torch clones, then fills in place)"},
      {"index", "torch: follows the indexed input's layout in some cases; loom: row-major"},
      {"index_mask", "as index"},
      {"index_pair", "as index"},
      {"stack", "torch: cat of the unsqueezed inputs, channels_last decided on their size-1 dims' strides; loom: "
                "channels_last only where every 4-d input suggests it"},
  };
  const auto it = pending.find(op);
  return it == pending.end() ? nullptr : it->second;
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
    for (OpEntry &e : t) e.strides = !e.view_op && !strides_pending(e.name);
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
