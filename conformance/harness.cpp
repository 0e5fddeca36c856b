#include "harness.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>

#include "loom/backends.h"
#include "torch_views.h"

namespace loom::conformance {

const char *outcome_name(Outcome o) {
  switch (o) {
    case Outcome::Pass: return "pass";
    case Outcome::Fail: return "fail";
    case Outcome::Gap: return "gap";
    case Outcome::Unsupported: return "unsupported";
  }
  return "?";
}

Shape clamp_numel(Shape s, int64_t max_numel) {
  while (shape_numel(s) > max_numel) {
    auto it = std::max_element(s.begin(), s.end());
    *it -= 1;
  }
  return s;
}

namespace {

std::vector<Shape> input_shapes(const OpEntry &op, const Shape &shape, Rng &rng) {
  if (op.shape_fn) return op.shape_fn(shape, rng);
  if (op.shapes == ShapeKind::None) return {};
  std::vector<Shape> out(static_cast<size_t>(op.arity), shape);
  if (op.shapes == ShapeKind::Same || rng.coin(0.4)) return out;
  for (Shape &s : out) {
    if (rng.coin(0.3)) s.erase(s.begin(), s.begin() + rng.uniform(0, static_cast<int64_t>(s.size())));
    for (int64_t &d : s)
      if (rng.coin(0.3)) d = 1;
  }
  return out;
}

double max_abs(const std::vector<HostTensor> &xs) {
  double m = 0;
  for (const HostTensor &x : xs)
    for (int64_t i = 0; i < x.numel(); ++i)
      if (std::isfinite(x.get(i))) m = std::max(m, std::fabs(x.get(i)));
  return m;
}

}  // namespace

Tolerance tolerance_for(const OpEntry &op, const HostTensor &want, const std::vector<HostTensor> &inputs,
                        const Attrs &attrs) {
  Tolerance tol = default_tolerance(want.dtype);
  tol.rtol *= op.tol_scale;
  tol.atol *= op.tol_scale;
  if (op.reduction && !inputs.empty() && want.numel() > 0) {
    const double count = std::max<double>(1, op.reduced_per_output ? op.reduced_per_output(inputs)
                                                                    : double(inputs[0].numel()) / double(want.numel()));
    const double magnitude = op.sum_of_products && inputs.size() >= 2
                                 ? std::max(1.0, max_abs({inputs[0]})) * std::max(1.0, max_abs({inputs[1]}))
                                 : std::max(1.0, max_abs(inputs));
    tol.atol *= std::sqrt(count) * magnitude;
  }
  if (op.cancelled_terms && !inputs.empty()) {
    // A few roundings of the cancelled terms, in the precision they are computed in.
    const double unit = want.dtype == DType::Float64 ? 0x1p-52 : 0x1p-23;
    tol.atol += 4 * unit * op.cancelled_terms(inputs, attrs);
  }
  return tol;
}

namespace {

// Checks for entries whose values torch cannot give (rand, randn, randint, ...).
std::optional<std::string> check_without_reference(const OpEntry &op, const CaseSpec &spec, const Attrs &attrs,
                                                   const HostTensor &got) {
  const Shape want_shape = op.check == Check::Permutation ? Shape{attrs.get_int("n")} : spec.shape;
  if (got.shape != want_shape) return "shape: expected " + shape_str(want_shape) + ", got " + shape_str(got.shape);
  if (got.dtype != spec.dtype)
    return std::string("dtype: expected ") + dtype_name(spec.dtype) + ", got " + dtype_name(got.dtype);
  if (op.check == Check::Permutation) {
    // 0..n-1, each as the dtype holds it (bfloat16 rounds integers above 256,
    // so torch's permutation repeats values there too).
    HostTensor want = HostTensor::contiguous(got.dtype, {got.numel()});
    std::map<double, int64_t> left;
    for (int64_t k = 0; k < got.numel(); ++k) {
      want.set(k, static_cast<double>(k));
      left[want.get(k)]++;
    }
    for (int64_t i = 0; i < got.numel(); ++i) {
      const double v = got.get(i);
      auto it = left.find(v);
      if (it == left.end() || it->second == 0)
        return "not a permutation: value " + std::to_string(v) + " at " + std::to_string(i);
      it->second--;
    }
  }
  const double lo = op.check == Check::InRange ? attrs.get_int("low") : 0;
  const double hi = op.check == Check::InRange ? attrs.get_int("high") : 1;
  bool all_same = true;
  for (int64_t i = 0; i < got.numel(); ++i) {
    const double v = got.get(i);
    if ((op.check == Check::Uniform01 || op.check == Check::InRange) && !(v >= lo && v < hi))
      return "value " + std::to_string(v) + " at " + std::to_string(i) + " is outside [" + std::to_string(lo) + ", " +
             std::to_string(hi) + ")";
    if (op.check == Check::InRange && attrs.get_bool("integral", false) && v != std::floor(v))
      return "value " + std::to_string(v) + " at " + std::to_string(i) + " is not an integer";
    if (!std::isfinite(v)) return "value at " + std::to_string(i) + " is not finite";
    all_same &= v == got.get(0);
  }
  if (got.numel() >= 8 && all_same) return "all " + std::to_string(got.numel()) + " values are equal";
  return std::nullopt;
}

}  // namespace

std::string first_line(const std::string &s) { return s.substr(0, s.find('\n')); }

PreparedCase prepare_case(const CaseSpec &spec, const std::function<Domain(Domain)> &adjust_domain) {
  const OpEntry &op = *spec.op;
  PreparedCase c;
  c.rng = std::make_shared<Rng>(spec.seed);
  Rng &rng = *c.rng;
  c.in_dtypes = spec.input_dtypes.empty() ? op.inputs_for(spec.dtype) : spec.input_dtypes;
  const std::vector<Shape> shapes = input_shapes(op, spec.shape, rng);
  CaseContext ctx{spec.dtype, spec.shape, {}, {}};
  for (size_t i = 0; i < shapes.size(); ++i) {
    const Layout l = spec.layouts.empty() ? Layout::Contiguous : spec.layouts[i % spec.layouts.size()];
    c.ins.push_back(plan_layout(l, shapes[i], c.in_dtypes[i], rng));
    ctx.inputs.push_back(c.ins.back().view);
    ctx.torch_views.push_back(torch_view_info(c.ins.back().base, c.ins.back().steps));
  }
  c.attrs = op.attrs ? op.attrs(ctx, rng) : Attrs();
  for (size_t i = 0; i < c.ins.size(); ++i) {
    Domain d = op.domain(c.in_dtypes[i], static_cast<int>(i), c.attrs);
    fill_storage(c.ins[i].base, adjust_domain ? adjust_domain(d) : d, rng);
    c.views.push_back(c.ins[i].view);
  }
  std::ostringstream rep;
  rep << "op " << op.name << " (Tensor::" << op.method << "), dtype " << dtype_name(spec.dtype) << ", case shape "
      << shape_str(spec.shape) << ", seed " << spec.seed << "\n  attrs: " << (c.attrs.values.empty() ? "-" : c.attrs.str());
  for (size_t i = 0; i < c.ins.size(); ++i)
    rep << "\n  input " << i << " " << dtype_name(c.in_dtypes[i]) << " " << c.ins[i].str() << "\n    values "
        << values_str(c.views[i]);
  c.header = rep.str();
  return c;
}

bool has_negative_layout(const CaseSpec &spec) {
  return std::any_of(spec.layouts.begin(), spec.layouts.end(), [](Layout l) { return l == Layout::Negative; });
}

std::optional<HostTensor> torch_forward(const OpEntry &op, const PreparedCase &c, std::string *error,
                                        std::vector<int64_t> *strides) {
  try {
    if (!op.view_op) return reference::run(op.ref_op, c.views, c.attrs, strides);
    std::vector<reference::ViewStep> steps = c.ins.at(0).steps;
    steps.push_back({op.ref_op, c.attrs});
    return reference::apply_view_chain(c.ins[0].base, steps);
  } catch (const std::exception &e) {
    if (error) *error = first_line(e.what());
    return std::nullopt;
  }
}

namespace {

CaseResult run_case_quietly(const CaseSpec &spec) {
  const OpEntry &op = *spec.op;
  PreparedCase c = prepare_case(spec);
  const std::vector<LayoutInput> &ins = c.ins;
  const std::vector<HostTensor> &views = c.views;
  const Attrs &attrs = c.attrs;
  std::ostringstream rep;
  rep << c.header;

  std::string ref_error;
  // Every entry has a reference op (OpTable.EntriesAreWellFormed); random entries
  // compare no values with it, only which inputs torch accepts.
  std::vector<int64_t> want_strides;
  const std::optional<HostTensor> want = torch_forward(op, c, &ref_error, op.strides ? &want_strides : nullptr);

  CaseResult r;
  auto fail = [&](const std::string &why) {
    r.outcome = Outcome::Fail;
    r.summary = first_line(why);
    r.report = rep.str() + "\n  FAILED: " + why;
    return r;
  };

  std::vector<Tensor> ts;
  try {
    for (const LayoutInput &in : ins) ts.push_back(build_engine(in));
  } catch (const std::exception &e) {
    return fail(std::string("building the input layout in the engine threw: ") + e.what());
  }
  std::optional<HostTensor> got;
  std::vector<int64_t> got_strides;
  std::string eng_error;
  bool loom_error = false;
  try {
    Tensor::manual_seed(spec.seed);  // rand/randn: the same case draws the same numbers (reproducible shrinking)
    const Tensor out = op.engine(ts, attrs);
    if (op.strides) got_strides = out.strides();
    got = out.to_host();
  } catch (const Error &e) {
    eng_error = e.what();
    loom_error = true;
  } catch (const std::exception &e) {
    eng_error = std::string("non-loom::Error exception: ") + e.what();
  }

  // A dtype outside the entry: torch decides. Both reject: unsupported. Torch
  // accepts and the engine rejects: a gap. The engine accepts: a failure either
  // way (torch rejects, or the entry should list the dtype and compare values).
  if (!op.supports(spec.dtype)) {
    const std::string dt = dtype_name(spec.dtype);
    if (got)
      return fail("dtype " + dt + " is outside the op table entry, but the engine accepted it (" +
                  (want ? "torch accepts it too: the entry should list it" : "torch rejects it: " + ref_error) + ")");
    if (!loom_error) return fail("dtype outside the entry: expected loom::Error, got " + eng_error);
    if (want) {
      r.outcome = Outcome::Gap;
      r.summary = "torch accepts " + dt + " (" + dtype_name(want->dtype) + " " + shape_str(want->shape) +
                  "), the engine rejects it: " + first_line(eng_error);
      r.report = rep.str() + "\n  GAP: " + r.summary;
      return r;
    }
    if (eng_error.find(dt) == std::string::npos)
      return fail("dtype outside the entry: the error does not name " + dt + ": " + eng_error);
    r.outcome = Outcome::Unsupported;
    r.summary = "both reject: " + first_line(eng_error) + " (torch: " + ref_error + ")";
    return r;
  }
  if (!want) {
    if (loom_error) {
      r.summary = "both reject: " + first_line(eng_error) + " (torch: " + ref_error + ")";
      return r;
    }
    if (!got) return fail("torch rejects (" + ref_error + "); the engine threw a non-loom error: " + eng_error);
    return fail("torch rejects (" + ref_error + ") but the engine returned " + geometry_str(*got) + " " + values_str(*got));
  }
  if (!got) return fail("the engine threw: " + eng_error);
  std::optional<std::string> bad;
  if (op.check == Check::Values) {
    bad = compare(*got, *want, tolerance_for(op, *want, views, attrs));
  } else if (op.check == Check::ShapeDtype) {
    if (got->shape != want->shape || got->dtype != want->dtype)
      bad = std::string("expected ") + dtype_name(want->dtype) + " " + shape_str(want->shape) + ", got " +
            dtype_name(got->dtype) + " " + shape_str(got->shape);
  } else if (got->shape != want->shape || got->dtype != want->dtype) {
    bad = std::string("expected ") + dtype_name(want->dtype) + " " + shape_str(want->shape) + " (torch's), got " +
          dtype_name(got->dtype) + " " + shape_str(got->shape);
  } else {
    bad = check_without_reference(op, spec, attrs, *got);
  }
  if (!bad && op.strides && !has_negative_layout(spec)) bad = compare_strides(got->shape, got_strides, want_strides);
  if (bad) return fail(*bad);
  return r;
}

}  // namespace

namespace {
bool g_rehearsing = false;
}  // namespace

bool rehearsing() { return g_rehearsing; }

void compile_cases_ahead(const std::function<void()> &cases) {
  static const bool off = [] {
    const char *e = std::getenv("LOOM_CONFORMANCE_COMPILE_AHEAD");
    return e && std::string(e) == "0";
  }();
  if (off) return;
  struct Rehearsal {
    Rehearsal() { g_rehearsing = true; }
    ~Rehearsal() { g_rehearsing = false; }
  } rehearsal;
  backends::compile_ahead(cases);
}

CaseResult run_case(const CaseSpec &spec) {
  CaseResult r = run_case_quietly(spec);
  // LOOM_CONFORMANCE_VERBOSE=1: one line per case, to see what the generators produce.
  static const bool verbose = std::getenv("LOOM_CONFORMANCE_VERBOSE") != nullptr;
  if (verbose)
    std::cerr << outcome_name(r.outcome) << " " << spec.op->name << " " << dtype_name(spec.dtype) << " "
              << shape_str(spec.shape) << " seed " << spec.seed << (r.summary.empty() ? "" : ": ") << r.summary << "\n";
  return r;
}

}  // namespace loom::conformance
