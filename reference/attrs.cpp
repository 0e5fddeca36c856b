// Attrs accessors and printing: torch-free, so they build in a second.
#include <cmath>
#include <sstream>
#include <stdexcept>

#include "attrs.h"

namespace loom::reference {
namespace {

template <typename T>
const T &typed(const Attrs &a, const std::string &k, const char *want) {
  auto it = a.values.find(k);
  if (it == a.values.end()) throw std::invalid_argument("attr '" + k + "' is missing (want " + want + ")");
  if (const T *v = std::get_if<T>(&it->second)) return *v;
  throw std::invalid_argument("attr '" + k + "' is not " + want);
}

const char *dtype_str(DType dt) {
  static const char *const names[] = {"bool",    "uint8",    "int8",    "int16",   "int32",
                                      "int64",   "float16",  "bfloat16", "float32", "float64"};
  return names[static_cast<int>(dt)];
}

std::string value_str(const AttrValue &v) {
  std::ostringstream os;
  std::visit(
      [&](const auto &x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, bool>) {
          os << (x ? "true" : "false");
        } else if constexpr (std::is_same_v<T, int64_t> || std::is_same_v<T, double>) {
          os << x;
        } else if constexpr (std::is_same_v<T, std::string>) {
          os << '"' << x << '"';
        } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
          os << '[';
          for (size_t i = 0; i < x.size(); ++i) os << (i ? ", " : "") << x[i];
          os << ']';
        } else if constexpr (std::is_same_v<T, DType>) {
          os << dtype_str(x);
        } else {
          os << scalar_str(x);
        }
      },
      v);
  return os.str();
}

}  // namespace

bool Attrs::get_bool(const std::string &k) const { return typed<bool>(*this, k, "a bool"); }
int64_t Attrs::get_int(const std::string &k) const { return typed<int64_t>(*this, k, "an int"); }
std::optional<int64_t> Attrs::opt_int(const std::string &k) const {
  if (!has(k)) return std::nullopt;
  return get_int(k);
}
double Attrs::get_double(const std::string &k) const { return typed<double>(*this, k, "a double"); }
const std::string &Attrs::get_string(const std::string &k) const { return typed<std::string>(*this, k, "a string"); }
const std::vector<int64_t> &Attrs::get_ints(const std::string &k) const {
  return typed<std::vector<int64_t>>(*this, k, "an int list");
}
std::vector<int64_t> Attrs::get_ints(const std::string &k, const std::vector<int64_t> &dflt) const {
  return has(k) ? get_ints(k) : dflt;
}
DType Attrs::get_dtype(const std::string &k) const { return typed<DType>(*this, k, "a dtype"); }
std::optional<DType> Attrs::opt_dtype(const std::string &k) const {
  if (!has(k)) return std::nullopt;
  return get_dtype(k);
}
Scalar Attrs::get_scalar(const std::string &k) const { return typed<Scalar>(*this, k, "a scalar"); }

std::string Attrs::str() const {
  std::string out;
  for (const auto &[k, v] : values) out += (out.empty() ? "" : " ") + k + "=" + value_str(v);
  return out;
}

std::string scalar_str(const Scalar &s) {
  switch (s.kind) {
    case Scalar::Kind::Bool:
      return s.i ? "true" : "false";
    case Scalar::Kind::Int:
      return std::to_string(s.i);
    case Scalar::Kind::Float: {
      std::ostringstream os;
      os.precision(17);
      os << s.f;
      std::string r = os.str();
      // Keep the kind visible: 2.0 prints as "2.0", not "2".
      if (std::isfinite(s.f) && r.find_first_of(".e") == std::string::npos) r += ".0";
      return r;
    }
  }
  return "?";
}

std::string ViewStep::str() const { return op + "(" + attrs.str() + ")"; }

}  // namespace loom::reference
