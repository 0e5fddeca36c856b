// check() and shrink() (fuzz_program.h): run a program in loom and in
// libtorch, compare every value and gradient, and cut failing programs down.
#include <algorithm>
#include <chrono>
#include <functional>
#include <set>
#include <sstream>
#include <vector>

#include "compare.h"
#include "fuzz_program.h"
#include "op_table.h"
#include "program_run.h"

namespace loom::fuzz {

HostTensor leaf_values(const Step &leaf) {
  HostTensor h = HostTensor::contiguous(leaf.dtype, leaf.shape);
  conformance::Rng rng(leaf.seed);
  conformance::fill_storage(h, leaf.domain, rng);
  return h;
}

Tensor leaf_tensor(const Step &leaf) {
  Tensor t = Tensor::from_host(leaf_values(leaf));
  if (leaf.grad) t.requires_grad_();
  return t;
}

Tensor run_op(const Step &op, const std::vector<Tensor> &inputs) {
  const conformance::OpEntry *e = conformance::find_op(op.op);
  if (!e) throw std::runtime_error("unknown op '" + op.op + "'");
  return e->engine(inputs, op.attrs);
}

void run_write(const Step &w, Tensor &target, const Tensor &other) {
  if (w.op == "copy_") {
    target.assign(other);
    return;
  }
  if (w.op != "add_" && w.op != "masked_fill_") throw std::runtime_error("unknown write '" + w.op + "'");
  target.check_in_place({other});  // torch's checks of an in-place op, before it computes
  target.assign(w.op == "add_" ? target.add(other) : target.masked_fill(other, w.attrs.get_scalar("value")));
}

namespace {

// Chained ops round at every step on both sides, but in different orders
// inside reductions and fused kernels: a few ulps per op more than one op's.
constexpr double kValueTolScale = 16, kGradTolScale = 64;

struct EngineRun {
  std::vector<Tensor> v;
  int error_step = -1;
  std::string error;
  bool crash = false;  // an exception other than loom::Error (InternalError included)
};

EngineRun run_engine(const Program &p) {
  EngineRun r;
  for (size_t i = 0; i < p.steps.size(); ++i) {
    const Step &s = p.steps[i];
    try {
      auto at = [&](size_t k) -> Tensor & { return r.v.at(static_cast<size_t>(s.args.at(k))); };
      switch (s.kind) {
        case StepKind::Leaf: r.v.push_back(leaf_tensor(s)); break;
        case StepKind::Op: {
          std::vector<Tensor> in;
          for (size_t k = 0; k < s.args.size(); ++k) in.push_back(at(k));
          r.v.push_back(run_op(s, in));
          break;
        }
        case StepKind::Write: run_write(s, at(0), at(1)), r.v.emplace_back(); break;
        case StepKind::Backward: {
          const Tensor &out = at(0);
          out.mul(Tensor::from_host(reference::loss_weight(out.shape(), out.dtype(), s.seed))).sum().backward();
          r.v.emplace_back();
          break;
        }
      }
    } catch (const Error &e) {
      r.error_step = static_cast<int>(i), r.error = e.what();
      return r;
    } catch (const std::exception &e) {
      r.error_step = static_cast<int>(i), r.error = e.what(), r.crash = true;
      return r;
    }
  }
  return r;
}

std::vector<reference::ProgramStep> oracle_steps(const Program &p) {
  std::vector<reference::ProgramStep> out;
  for (const Step &s : p.steps) {
    reference::ProgramStep r;
    r.kind = s.kind;
    r.args = s.args;
    r.attrs = s.attrs;
    r.op = s.op;
    if (s.kind == StepKind::Op) r.op = conformance::find_op(s.op) ? conformance::find_op(s.op)->ref_op : s.op;
    if (s.kind == StepKind::Leaf) r.value = leaf_values(s), r.requires_grad = s.grad;
    r.weight_seed = s.seed;
    out.push_back(std::move(r));
  }
  return out;
}

Verdict fail(std::string kind, std::string message) { return {false, true, std::move(kind), std::move(message)}; }

}  // namespace

Verdict check(const Program &p) {
  const reference::ProgramResult want = reference::run_program(oracle_steps(p));
  EngineRun got = run_engine(p);
  const auto step_name = [](int i) { return "step " + std::to_string(i + 1); };
  if (got.crash) return fail("crash", step_name(got.error_step) + ": loom crashed: " + got.error);
  if (want.error_step >= 0 && got.error_step >= 0) {
    if (want.error_step != got.error_step)
      return fail("reject step", "torch rejects " + step_name(want.error_step) + " (" + want.error + "), loom " +
                                     step_name(got.error_step) + " (" + got.error + ")");
    return {true, false, "both reject", ""};
  }
  if (want.error_step >= 0)
    return fail("torch rejects", step_name(want.error_step) + ": torch rejects (" + want.error + "), loom accepts");
  if (got.error_step >= 0)
    return fail("loom rejects", step_name(got.error_step) + ": loom rejects (" + got.error + "), torch accepts");
  // Values and gradients are compared at the loosest tolerance of the
  // program's float dtypes: a float32 result may have passed through bfloat16.
  conformance::Tolerance loosest;
  for (const auto &w : want.values)
    if (w) {
      const conformance::Tolerance t = conformance::default_tolerance(w->dtype);
      loosest.rtol = std::max(loosest.rtol, t.rtol), loosest.atol = std::max(loosest.atol, t.atol);
    }
  const auto tolerance = [&](DType dt, double scale) {
    conformance::Tolerance t = conformance::default_tolerance(dt);
    if (is_float(dt)) t = loosest;
    t.rtol *= scale, t.atol *= scale;
    return t;
  };
  std::vector<Tensor> defined;
  for (size_t i = 0; i < p.steps.size(); ++i)
    if (want.values[i]) defined.push_back(got.v[i]);
  try {
    realize_all(defined);
    for (size_t i = 0; i < p.steps.size(); ++i) {
      const std::string name = step_name(static_cast<int>(i));
      if (want.values[i]) {
        const conformance::Tolerance tol = tolerance(want.values[i]->dtype, kValueTolScale);
        if (auto d = conformance::compare(got.v[i].to_host(), *want.values[i], tol)) return fail("value", name + " value: " + *d);
        if (auto d = conformance::compare_strides(got.v[i].shape(), got.v[i].strides(), want.strides[i]))
          return fail("strides", name + " " + *d);
      }
      const std::optional<Tensor> g = p.steps[i].kind == StepKind::Leaf ? got.v[i].grad() : std::nullopt;
      if (g.has_value() != want.grads[i].has_value())
        return fail("grad", name + " grad: " + (g ? "loom has one, torch none" : "torch has one, loom none"));
      if (g) {
        const conformance::Tolerance tol = tolerance(want.grads[i]->dtype, kGradTolScale);
        if (auto d = conformance::compare(g->to_host(), *want.grads[i], tol)) return fail("grad", name + " grad: " + *d);
      }
    }
  } catch (const Error &e) {
    return fail("loom rejects", std::string("realize: loom rejects: ") + e.what());
  } catch (const std::exception &e) {
    return fail("crash", std::string("realize: loom crashed: ") + e.what());
  }
  return {true, true, "", ""};
}

const KnownFailure *known_failure(const Verdict &v) {
  // Open loom bugs the bounded run reports as "known bug" rather than as a
  // failure, each with its regression case (registered DISABLED by a
  // '# known-bug:' line until fixed). None is open.
  static const std::vector<KnownFailure> known = {};
  for (const KnownFailure &k : known)
    if (v.kind == k.kind && v.message.find(k.substring) != std::string::npos) return &k;
  return nullptr;
}

namespace {

// p without step `drop` and every step that reads it (transitively); writes
// into removed values and backward from them go too. Indices are renumbered.
std::optional<Program> without(const Program &p, size_t drop) {
  std::set<size_t> gone = {drop};
  for (size_t i = drop + 1; i < p.steps.size(); ++i)
    for (int a : p.steps[i].args)
      if (gone.count(static_cast<size_t>(a))) gone.insert(i);
  if (gone.size() == p.steps.size()) return std::nullopt;
  Program q;
  q.seed = p.seed;
  std::vector<int> index(p.steps.size(), -1);
  for (size_t i = 0; i < p.steps.size(); ++i) {
    if (gone.count(i)) continue;
    Step s = p.steps[i];
    for (int &a : s.args) a = index[static_cast<size_t>(a)];
    index[i] = static_cast<int>(q.steps.size());
    q.steps.push_back(std::move(s));
  }
  return q;
}

}  // namespace

Program shrink(const Program &p, const Verdict &failure, double budget_seconds) {
  const auto start = std::chrono::steady_clock::now();
  const auto over = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > budget_seconds;
  };
  const auto still_fails = [&](const Program &q) {
    const Verdict v = check(q);
    return !v.pass && v.kind == failure.kind;
  };
  Program best = p;
  for (bool progress = true; progress && !over();) {
    progress = false;
    for (size_t i = best.steps.size(); i-- > 0 && !over();) {
      if (auto q = without(best, i); q && still_fails(*q)) {
        best = std::move(*q);
        progress = true;
      }
    }
    // Leaves without grad are simpler to read; keep it only where it matters.
    for (size_t i = 0; i < best.steps.size() && !over(); ++i) {
      if (!best.steps[i].grad) continue;
      Program q = best;
      q.steps[i].grad = false;
      if (still_fails(q)) best = std::move(q), progress = true;
    }
  }
  return best;
}

}  // namespace loom::fuzz
