// generate() (fuzz_program.h): builds a program step by step, running each
// candidate step lazily in loom for its shape and dtype (nothing is
// computed) and dropping steps that loom or torch's view rules reject, so
// most programs run to the end on both sides.
#include <algorithm>
#include <set>

#include "fuzz_program.h"
#include "loom/autograd.h"
#include "movement_gen.h"
#include "op_table.h"
#include "program_run.h"
#include "torch_views.h"

namespace loom::fuzz {
namespace {

using conformance::Domain;
using conformance::OpEntry;
using conformance::Rng;
using reference::ViewStep;

// Entries the generator never picks: no reference value to compare (random
// ops, creation), or not a function of their inputs' values.
bool usable(const OpEntry &e) {
  return e.check == conformance::Check::Values && !e.ref_op.empty() && e.shapes != conformance::ShapeKind::None;
}

// Views after which a write is left out: they alias one storage element from
// several (torch then writes in an unspecified order, or refuses).
const std::set<std::string> &overlapping_views() {
  static const std::set<std::string> s = {"as_strided", "expand", "unfold", "expand_as", "broadcast_to"};
  return s;
}

bool tie_dependent_grad(const std::string &name) {
  for (const char *k : {"topk", "sort", "kthvalue", "median", "mode", "max_dim", "min_dim"})
    if (name.find(k) != std::string::npos) return true;
  return false;
}

// What the generator knows of each value.
struct Value {
  Tensor t;
  int root = -1;                // the step owning the storage this value views
  std::vector<ViewStep> chain;  // movement steps from root
  bool leaf_root = false;       // root is a leaf (a contiguous storage: as_strided is predictable)
  bool writable = false;        // a write may target it
  bool overlaps = false;        // may alias one storage element from several (never a write's target)
  std::set<int> storages;       // roots whose storage it may share (a write's source must share none with its target)
};

// Ops torch may answer with a view of an input (so their result shares its
// storage): movement entries, and entries whose name says so.
bool may_alias(const OpEntry &e) {
  if (e.view_op || e.name == "t") return true;
  for (const char *k : {"split", "chunk", "unbind", "squeeze", "select", "narrow", "diagonal", "unfold", "flatten",
                        "movedim", "swap", "view", "expand", "broadcast", "contiguous", "transpose", "permute"})
    if (e.name.find(k) != std::string::npos) return true;
  return false;
}

bool same_domain(const Domain &a, const Domain &b) {
  return a.lo == b.lo && a.hi == b.hi && a.grid == b.grid && a.zero_prob == b.zero_prob && a.min_abs == b.min_abs;
}

bool broadcasts_to(const Shape &from, const Shape &to) {
  if (from.size() > to.size()) return false;
  for (size_t i = 0; i < from.size(); ++i) {
    const int64_t f = from[from.size() - 1 - i], t = to[to.size() - 1 - i];
    if (f != 1 && f != t) return false;
  }
  return true;
}

class Generator {
 public:
  explicit Generator(uint64_t seed) : rng_(seed) { p_.seed = seed; }

  Program run(int max_steps) {
    add_leaf(random_dtype(), random_shape());
    if (rng_.coin()) add_leaf(random_dtype(), random_shape());
    const int n = static_cast<int>(rng_.uniform(2, max_steps));
    for (int tries = 0; static_cast<int>(p_.steps.size()) < n && tries < 4 * n; ++tries) {
      const double r = rng_.real(0, 1);
      if (r < 0.45) try_op();
      else if (r < 0.8) try_movement();
      else if (r < 0.95) try_write();
      else add_leaf(random_dtype(), random_shape());
    }
    add_backward();
    return p_;
  }

 private:
  Rng rng_;
  Program p_;
  std::vector<std::optional<Value>> v_;  // per step; nullopt for writes

  DType random_dtype() {
    static const std::vector<DType> weighted = {DType::Float32, DType::Float32, DType::Float32, DType::Float64,
                                                DType::Float16, DType::BFloat16, DType::Int64,  DType::Int32,
                                                DType::Int16,   DType::Int8,     DType::UInt8,  DType::Bool};
    return rng_.pick(weighted);
  }
  Shape random_shape() {
    static const std::vector<int64_t> dims = {1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 4, 4, 0};
    Shape s(static_cast<size_t>(rng_.uniform(0, 4)));
    for (int64_t &d : s) d = rng_.pick(dims);
    while (shape_numel(s) > 32) --*std::max_element(s.begin(), s.end());
    return s;
  }

  // The index of a value, recent ones more often; -1 when there is none.
  int pick_value(const std::function<bool(const Value &)> &ok = {}) {
    std::vector<int> c;
    for (size_t i = 0; i < v_.size(); ++i)
      if (v_[i] && (!ok || ok(*v_[i]))) c.push_back(static_cast<int>(i));
    if (c.empty()) return -1;
    if (c.size() > 3 && rng_.coin(0.6)) return c[c.size() - 1 - static_cast<size_t>(rng_.uniform(0, 2))];
    return rng_.pick(c);
  }

  int push(Step s, std::optional<Value> v) {
    p_.steps.push_back(std::move(s));
    v_.push_back(std::move(v));
    return static_cast<int>(p_.steps.size()) - 1;
  }
  void rollback(size_t steps) {
    p_.steps.resize(steps);
    v_.resize(steps);
  }

  int add_leaf(DType dt, const Shape &shape, std::optional<Domain> domain = std::nullopt) {
    Step s;
    s.kind = StepKind::Leaf;
    s.dtype = dt;
    s.shape = shape;
    s.seed = rng_.uniform(0, 99999);
    s.domain = domain.value_or(conformance::default_domain(dt));
    // Half leaves never require grad: torch 1.13 lacks half CPU kernels for
    // several backward formulas (pow's log), which would only test torch.
    s.grad = is_float(dt) && dt != DType::Float16 && dt != DType::BFloat16 && rng_.coin(0.7);
    Value v;
    v.t = leaf_tensor(s);
    v.leaf_root = true;
    v.writable = !s.grad;
    v.root = static_cast<int>(p_.steps.size());
    v.storages = {v.root};
    return push(std::move(s), std::move(v));
  }

  // torch's geometry of x's view after `extra` more steps (its root read as a
  // contiguous storage); throws where torch rejects a step.
  reference::ViewInfo torch_info(const Value &x, const std::vector<ViewStep> &extra) {
    std::vector<ViewStep> chain = x.chain;
    chain.insert(chain.end(), extra.begin(), extra.end());
    const Shape root_shape = v_[static_cast<size_t>(x.root)]->t.shape();
    return conformance::torch_view_info(HostTensor::contiguous(x.t.dtype(), root_shape), chain);
  }

  void try_movement() {
    const int xi = pick_value();
    const Value x = *v_[static_cast<size_t>(xi)];
    std::vector<std::string> ops = conformance::movement_ops();
    ops.push_back("contiguous");
    std::string op = rng_.pick(ops);
    if (op == "as_strided" && !x.leaf_root) op = "permute";
    try {
      const reference::ViewInfo info = torch_info(x, {});
      const conformance::ViewGeometry g{x.t.shape(), x.t.dtype(), info.offset, info.storage_numel};
      Step s;
      s.op = op;
      s.args = {xi};
      s.attrs = conformance::movement_attrs(op, g, rng_, 96);
      const ViewStep vs{op, s.attrs};
      torch_info(x, {vs});  // throws where torch rejects the step
      Value out = x;
      out.t = run_op(s, {x.t});
      if (out.t.numel() > 96) return;
      out.chain.push_back(vs);
      out.overlaps = x.overlaps || overlapping_views().count(op);
      out.writable = x.writable && !out.overlaps;
      push(std::move(s), std::move(out));
    } catch (const std::exception &) {
    }
  }

  void try_op() {
    static const std::vector<const OpEntry *> ops = [] {
      std::vector<const OpEntry *> v;
      for (const OpEntry &e : conformance::op_table())
        if (usable(e)) v.push_back(&e);
      return v;
    }();
    const OpEntry &e = *rng_.pick(ops);
    const int xi = pick_value();
    const Tensor x = v_[static_cast<size_t>(xi)]->t;
    if (x.numel() > e.max_numel) return;
    DType dt = x.dtype();
    if (!e.supports(dt)) {
      if (!rng_.coin(0.3)) return;
      dt = rng_.pick(e.dtypes);
    }
    std::vector<DType> in_dt = e.inputs_for(dt);
    std::vector<Shape> shapes;
    if (e.shape_fn) shapes = e.shape_fn(x.shape(), rng_);
    else shapes.assign(static_cast<size_t>(e.arity), x.shape());
    if (shapes.size() != in_dt.size()) return;
    const bool promotes = e.shapes == conformance::ShapeKind::Broadcast && !e.shape_fn;
    const size_t mark = p_.steps.size();
    std::vector<int> args(shapes.size(), -1);
    for (size_t j = 0; j < shapes.size(); ++j) {
      if (j == 0 && shapes[0] == x.shape() && in_dt[0] == x.dtype()) args[0] = xi;
      else if (j > 0 && rng_.coin(0.7))
        args[j] = pick_value([&](const Value &v) {
          if (promotes) return broadcasts_to(v.t.shape(), x.shape());
          return v.t.shape() == shapes[j] && v.t.dtype() == in_dt[j];
        });
      if (args[j] >= 0) in_dt[j] = v_[static_cast<size_t>(args[j])]->t.dtype();
    }
    conformance::CaseContext c;
    c.dtype = dt;
    c.shape = x.shape();
    for (size_t j = 0; j < shapes.size(); ++j) {
      const Shape s = args[j] >= 0 ? v_[static_cast<size_t>(args[j])]->t.shape() : shapes[j];
      c.inputs.push_back(HostTensor::contiguous(in_dt[j], s));
      c.torch_views.push_back({s, row_major_strides(s), 0, shape_numel(s), true});
    }
    try {
      Step s;
      s.op = e.name;
      if (e.attrs) s.attrs = e.attrs(c, rng_);
      for (size_t j = 0; j < shapes.size(); ++j) {
        // Values are drawn for the dtype the op computes in: a 0-d operand of
        // the same category as a dimensioned one takes its dtype (torch's
        // promotion), so a shift count, say, stays within that dtype's width.
        const bool same_category = is_float(in_dt[j]) == is_float(in_dt[0]) && in_dt[j] != DType::Bool &&
                                   in_dt[0] != DType::Bool;
        const DType value_dt = promotes && j > 0 && c.inputs[j].shape.empty() && !c.inputs[0].shape.empty() &&
                                       same_category
                                   ? in_dt[0]
                                   : in_dt[j];
        const Domain d =
            e.domain ? e.domain(value_dt, static_cast<int>(j), s.attrs) : conformance::default_domain(in_dt[j]);
        if (args[j] < 0 || !same_domain(d, conformance::default_domain(in_dt[j])))
          args[j] = add_leaf(in_dt[j], c.inputs[j].shape, d);
      }
      std::vector<Tensor> in;
      for (int a : args) in.push_back(v_[static_cast<size_t>(a)]->t);
      s.args = args;
      Value out;
      out.t = run_op(s, in);
      if (out.t.numel() > 96) return rollback(mark);
      // Programs differentiate only through entries the op table marks
      // differentiable (torch raises for the others), and not through ops
      // whose gradient follows torch's unspecified choice among ties.
      if (out.t.requires_grad() && (!e.backward || tie_dependent_grad(e.name))) return rollback(mark);
      out.root = static_cast<int>(p_.steps.size());
      out.storages = {out.root};
      out.overlaps = overlapping_views().count(e.name);
      if (may_alias(e))
        for (int a : args) {
          const Value &in = *v_[static_cast<size_t>(a)];
          out.storages.insert(in.storages.begin(), in.storages.end());
          out.overlaps |= in.overlaps;  // a chunk of an overlapping window still overlaps
        }
      // A movement entry's result is no target for writes: where it lands
      // depends on that aliasing.
      out.writable = !e.view_op && !out.overlaps;
      push(std::move(s), std::move(out));
    } catch (const std::exception &) {
      rollback(mark);
    }
  }

  void try_write() {
    const int ti = pick_value([&](const Value &v) { return v.writable; });
    if (ti < 0) return;
    const Tensor target = v_[static_cast<size_t>(ti)]->t;
    const std::set<int> &ts = v_[static_cast<size_t>(ti)]->storages;
    const auto apart = [&](const Value &v) {
      for (int r : v.storages)
        if (ts.count(r)) return false;
      return true;
    };
    const size_t mark = p_.steps.size();
    Step s;
    s.kind = StepKind::Write;
    const double r = rng_.real(0, 1);
    int src = -1;
    if (r < 0.4) {
      s.op = "copy_";
      if (rng_.coin(0.6)) src = pick_value([&](const Value &v) { return apart(v) && broadcasts_to(v.t.shape(), target.shape()); });
      if (src < 0) src = add_leaf(random_dtype(), target.shape());
    } else if (r < 0.7) {
      s.op = "add_";
      if (rng_.coin(0.6))
        src = pick_value([&](const Value &v) {
          return apart(v) && broadcasts_to(v.t.shape(), target.shape()) && promote_types(target.dtype(), v.t.dtype()) == target.dtype();
        });
      if (src < 0) src = add_leaf(target.dtype(), target.shape());
    } else {
      s.op = "masked_fill_";
      if (rng_.coin(0.5))
        src = pick_value([&](const Value &v) {
          return apart(v) && v.t.dtype() == DType::Bool && broadcasts_to(v.t.shape(), target.shape());
        });
      if (src < 0) src = add_leaf(DType::Bool, target.shape());
      s.attrs.set_scalar("value", conformance::random_scalar_for(target.dtype(), conformance::default_domain(target.dtype()), rng_));
    }
    s.args = {ti, src};
    try {
      run_write(s, v_[static_cast<size_t>(ti)]->t, v_[static_cast<size_t>(src)]->t);
      push(std::move(s), std::nullopt);
    } catch (const std::exception &) {
      rollback(mark);
    }
  }

  void add_backward() {
    int li = -1;  // the latest op result that requires grad, else any value that does
    for (size_t i = 0; i < v_.size(); ++i)
      if (v_[i] && is_float(v_[i]->t.dtype()) && v_[i]->t.requires_grad() && p_.steps[i].kind == StepKind::Op)
        li = static_cast<int>(i);
    if (li < 0) li = pick_value([](const Value &v) { return is_float(v.t.dtype()) && v.t.requires_grad(); });
    if (li < 0) return;
    Step s;
    s.kind = StepKind::Backward;
    s.args = {li};
    s.seed = rng_.uniform(0, 999);
    push(std::move(s), std::nullopt);
  }
};

}  // namespace

Program generate(uint64_t seed, int max_steps) { return Generator(seed).run(max_steps); }

}  // namespace loom::fuzz
