// listing() and parse_listing(): the readable program format (fuzz_program.h).
// Attr values carry their type in their spelling: 1 (int), 1.0 / 1e-05 / nan
// (double), s:1 / s:1.5 / s:true (Scalar), [1,2] (ints), float32 (dtype),
// true / false (bool), "none" (string).
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>
#include <stdexcept>

#include "fuzz_program.h"

namespace loom::fuzz {
namespace {

std::string double_str(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  std::string s = buf;
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

std::string scalar_text(const Scalar &s) {
  switch (s.kind) {
    case Scalar::Kind::Bool: return s.i ? "s:true" : "s:false";
    case Scalar::Kind::Int: return "s:" + std::to_string(s.i);
    case Scalar::Kind::Float: return "s:" + double_str(s.f);
  }
  return "s:0";
}

std::string ints_text(const std::vector<int64_t> &v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "]";
}

std::string value_text(const reference::AttrValue &v) {
  return std::visit(
      [](const auto &x) -> std::string {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, bool>) return x ? "true" : "false";
        else if constexpr (std::is_same_v<T, int64_t>) return std::to_string(x);
        else if constexpr (std::is_same_v<T, double>) return double_str(x);
        else if constexpr (std::is_same_v<T, std::string>) return "\"" + x + "\"";
        else if constexpr (std::is_same_v<T, std::vector<int64_t>>) return ints_text(x);
        else if constexpr (std::is_same_v<T, DType>) return dtype_name(x);
        else return scalar_text(x);
      },
      v);
}

std::optional<DType> dtype_named(const std::string &s) {
  for (DType dt : kAllDTypes)
    if (s == dtype_name(dt)) return dt;
  return std::nullopt;
}

bool is_int_text(const std::string &s) {
  size_t i = (s.size() > 1 && s[0] == '-') ? 1 : 0;
  if (i == s.size()) return false;
  for (; i < s.size(); ++i)
    if (!std::isdigit(static_cast<unsigned char>(s[i]))) return false;
  return true;
}

double parse_double(const std::string &s) {
  if (s == "nan") return NAN;
  if (s == "inf") return INFINITY;
  if (s == "-inf") return -INFINITY;
  size_t used = 0;
  const double v = std::stod(s, &used);
  if (used != s.size()) throw std::runtime_error("bad number '" + s + "'");
  return v;
}

std::vector<int64_t> parse_ints(const std::string &s) {
  if (s.size() < 2 || s.front() != '[' || s.back() != ']') throw std::runtime_error("bad list '" + s + "'");
  std::vector<int64_t> v;
  std::stringstream in(s.substr(1, s.size() - 2));
  for (std::string item; std::getline(in, item, ',');) {
    if (!is_int_text(item)) throw std::runtime_error("bad list item '" + item + "'");
    v.push_back(std::stoll(item));
  }
  return v;
}

reference::AttrValue parse_value(const std::string &s) {
  if (s == "true" || s == "false") return s == "true";
  if (s.rfind("s:", 0) == 0) {
    const std::string x = s.substr(2);
    if (x == "true" || x == "false") return Scalar(x == "true");
    if (is_int_text(x)) return Scalar(static_cast<long long>(std::stoll(x)));
    return Scalar(parse_double(x));
  }
  if (s.front() == '"') return s.substr(1, s.size() - 2);
  if (s.front() == '[') return parse_ints(s);
  if (auto dt = dtype_named(s)) return *dt;
  if (is_int_text(s)) return static_cast<int64_t>(std::stoll(s));
  return parse_double(s);
}

// Leaf domain fields, printed only where they differ from the dtype's default.
void print_domain(std::ostream &os, const Step &s) {
  const conformance::Domain d = s.domain, dflt = conformance::Domain{};
  if (d.lo != dflt.lo || d.hi != dflt.hi) os << " lo=" << double_str(d.lo) << " hi=" << double_str(d.hi);
  if (d.grid != 0) os << " grid=" << double_str(d.grid);
  if (d.zero_prob != 0) os << " zero_prob=" << double_str(d.zero_prob);
  if (d.min_abs != 0) os << " min_abs=" << double_str(d.min_abs);
}

}  // namespace

std::string listing(const Program &p) {
  std::ostringstream os;
  std::map<int, int> name;  // step -> value number
  auto ref = [&](int step) { return "t" + std::to_string(name.at(step)); };
  for (size_t i = 0; i < p.steps.size(); ++i) {
    const Step &s = p.steps[i];
    switch (s.kind) {
      case StepKind::Leaf:
        name[static_cast<int>(i)] = static_cast<int>(name.size());
        os << ref(static_cast<int>(i)) << " = leaf " << dtype_name(s.dtype) << " " << ints_text(s.shape)
           << " seed=" << s.seed;
        print_domain(os, s);
        if (s.grad) os << " grad";
        break;
      case StepKind::Op:
        name[static_cast<int>(i)] = static_cast<int>(name.size());
        os << ref(static_cast<int>(i)) << " = " << s.op;
        for (int a : s.args) os << " " << ref(a);
        break;
      case StepKind::Write:
        os << s.op;
        for (int a : s.args) os << " " << ref(a);
        break;
      case StepKind::Backward: os << "backward " << ref(s.args.at(0)) << " seed=" << s.seed; break;
    }
    if (s.kind == StepKind::Op || s.kind == StepKind::Write)
      for (const auto &[k, v] : s.attrs.values) os << " " << k << "=" << value_text(v);
    os << "\n";
  }
  return os.str();
}

Program parse_listing(const std::string &text) {
  Program p;
  std::map<std::string, int> step_of;  // value name -> step
  std::istringstream in(text);
  int line_no = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    if (line.rfind("# seed ", 0) == 0) p.seed = std::stoull(line.substr(7));
    line = line.substr(0, line.find('#'));
    std::istringstream words(line);
    std::vector<std::string> w;
    for (std::string x; words >> x;) w.push_back(x);
    if (w.empty()) continue;
    try {
      Step s;
      std::string defines;
      size_t at = 0;
      if (w.size() >= 3 && w[1] == "=") defines = w[0], at = 2;
      const std::string head = w.at(at++);
      auto arg = [&](const std::string &n) {
        auto it = step_of.find(n);
        if (it == step_of.end()) throw std::runtime_error("unknown value '" + n + "'");
        return it->second;
      };
      if (head == "leaf") {
        s.kind = StepKind::Leaf;
        const auto dt = dtype_named(w.at(at++));
        if (!dt) throw std::runtime_error("bad dtype '" + w[at - 1] + "'");
        s.dtype = *dt;
        s.shape = parse_ints(w.at(at++));
      } else if (head == "backward") {
        s.kind = StepKind::Backward;
      } else {
        s.kind = head.back() == '_' ? StepKind::Write : StepKind::Op;
        s.op = head;
      }
      for (; at < w.size(); ++at) {
        const std::string &x = w[at];
        const size_t eq = x.find('=');
        if (eq == std::string::npos) {
          if (x == "grad" && s.kind == StepKind::Leaf) s.grad = true;
          else s.args.push_back(arg(x));
          continue;
        }
        const std::string k = x.substr(0, eq), v = x.substr(eq + 1);
        if (s.kind == StepKind::Leaf || s.kind == StepKind::Backward) {
          if (k == "seed") s.seed = std::stoull(v);
          else if (k == "lo") s.domain.lo = parse_double(v);
          else if (k == "hi") s.domain.hi = parse_double(v);
          else if (k == "grid") s.domain.grid = parse_double(v);
          else if (k == "zero_prob") s.domain.zero_prob = parse_double(v);
          else if (k == "min_abs") s.domain.min_abs = parse_double(v);
          else throw std::runtime_error("unknown field '" + k + "'");
        } else {
          s.attrs.values.insert_or_assign(k, parse_value(v));
        }
      }
      if (s.kind == StepKind::Backward && s.args.size() != 1) throw std::runtime_error("backward takes one value");
      if (!defines.empty()) step_of[defines] = static_cast<int>(p.steps.size());
      p.steps.push_back(std::move(s));
    } catch (const std::exception &e) {
      throw std::runtime_error("line " + std::to_string(line_no) + ": " + e.what() + ": " + line);
    }
  }
  return p;
}

}  // namespace loom::fuzz
