// The vocabulary the oracle and the op table share: named op attributes, the
// movement steps of a view chain and the geometry torch holds after one.
// Torch-free and built without libtorch (library loom_reference_attrs), so
// the op table, replay and fuzz can use it without linking the oracle.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "loom/dtype.h"
#include "loom/host.h"

namespace loom::reference {

using AttrValue = std::variant<bool, int64_t, double, std::string, std::vector<int64_t>, DType, Scalar>;

// Named op attributes. Typed setters instead of one `set` because a literal
// like `1` would convert ambiguously to bool / int64 / double / Scalar.
// Conventions (shared with conformance/op_table):
//   dims (ints; absent or empty = all), keepdim (bool), dim (int), dtype (DType),
//   scalar (Scalar: selects the tensor-scalar overload of add/sub/mul/div/pow),
//   shape, order, size, stride (ints), offset (int), pad / bounds (ints, flattened
//   (before, after) / (begin, end) pairs from dim 0), value (Scalar),
//   start / stop / step (int for slice; Scalar for arange), end (Scalar),
//   dim0 / dim1 (int), approximate (string).
//   Indexing/shaping/order/statistics (ops_index.cpp): piece (int: which output of
//   split/chunk/unbind), size / chunks / k / step / num_classes / correction (int),
//   sizes / shifts (ints), start / end (int, flatten), descending / largest (bool),
//   mode (string: pad_mode), n (int: the size an index input indexes; generators only).
//   nn ops (ops_nn.cpp; (h, w) pairs as 2 ints): stride / padding / dilation / kernel /
//   output_size (ints), padding_mode ("same"/"valid"), groups (int), training (bool),
//   ceil_mode / count_include_pad (bool), divisor_override (int) (pools),
//   momentum / eps / negative_slope / alpha / beta / threshold / min_val / max_val /
//   p / label_smoothing (double), min / max (Scalar, clamp), normalized_shape (ints),
//   reduction ("none"/"mean"/"sum"), ignore_index / classes (int).
struct Attrs {
  std::map<std::string, AttrValue> values;

  Attrs &set_bool(const std::string &k, bool v) { return put(k, v); }
  Attrs &set_int(const std::string &k, int64_t v) { return put(k, v); }
  Attrs &set_double(const std::string &k, double v) { return put(k, v); }
  Attrs &set_string(const std::string &k, const std::string &v) { return put(k, v); }
  Attrs &set_ints(const std::string &k, const std::vector<int64_t> &v) { return put(k, v); }
  Attrs &set_dtype(const std::string &k, DType v) { return put(k, v); }
  Attrs &set_scalar(const std::string &k, Scalar v) { return put(k, v); }

  bool has(const std::string &k) const { return values.count(k) != 0; }
  // Getters throw std::invalid_argument naming the key when it is missing or of another type.
  bool get_bool(const std::string &k) const;
  bool get_bool(const std::string &k, bool dflt) const { return has(k) ? get_bool(k) : dflt; }
  int64_t get_int(const std::string &k) const;
  std::optional<int64_t> opt_int(const std::string &k) const;
  double get_double(const std::string &k) const;
  const std::string &get_string(const std::string &k) const;
  const std::vector<int64_t> &get_ints(const std::string &k) const;
  std::vector<int64_t> get_ints(const std::string &k, const std::vector<int64_t> &dflt) const;
  DType get_dtype(const std::string &k) const;
  std::optional<DType> opt_dtype(const std::string &k) const;
  Scalar get_scalar(const std::string &k) const;

  // "dims=[0, 1] keepdim=true scalar=2.5"; keys in sorted order.
  std::string str() const;

 private:
  Attrs &put(const std::string &k, AttrValue v) {
    values.insert_or_assign(k, std::move(v));
    return *this;
  }
};

std::string scalar_str(const Scalar &s);  // "2", "2.5", "true" (the kind shows)

// One movement op of a view chain: a reference::run op name (reshape permute
// expand pad shrink flip slice as_strided transpose contiguous) and its attrs.
struct ViewStep {
  std::string op;
  Attrs attrs;
  std::string str() const;  // "slice(dim=1 start=3 step=-2)"
};

// What torch holds after a chain: the view's geometry and its storage size in
// elements (reference::view_chain_info asks torch; conformance/torch_views.h
// computes the same without torch). Generators use it to keep as_strided in bounds.
struct ViewInfo {
  Shape shape;
  std::vector<int64_t> strides;
  int64_t offset = 0;
  int64_t storage_numel = 0;
  bool base_storage = true;  // still a view of the base's storage: torch copied nowhere on the way
};

}  // namespace loom::reference
