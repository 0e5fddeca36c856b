#include "codegen/pipeline.h"

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <utility>

#include "codegen/atomic_writes.h"
#include "codegen/block.h"
#include "codegen/gemm_gather.h"
#include "codegen/merge_axes.h"
#include "codegen/mul_add.h"
#include "codegen/optimize.h"
#include "codegen/vectorize.h"
#include "knobs/knobs.h"
#include "uop/graph.h"
#include "uop/node_map.h"

namespace loom::codegen {

using uop::Op;
using uop::UOp;

namespace {

struct PassLogState {
  PassLog *log = nullptr;
  UOpRef last_graph;  // the latest pass's graph (kept alive: its nodes' addresses are compared)
  uop::RuleCounts rules;
};
thread_local PassLogState t_pass_log;

void record_pass(const char *pass, std::string text, const UOpRef &graph) {
  PassRecord r{pass, std::move(text), {}, std::exchange(t_pass_log.rules, {})};
  if (graph && t_pass_log.last_graph) {
    uop::NodeSet before;
    for (auto &u : uop::toposort(t_pass_log.last_graph)) before.insert(u.get());
    const std::vector<UOpRef> after = uop::toposort(graph);  // UOp::str's line order
    for (size_t i = 0; i < after.size(); i++)
      if (!before.contains(after[i].get())) r.changed.push_back(static_cast<int>(i));
  }
  if (graph) t_pass_log.last_graph = graph;
  t_pass_log.log->push_back(std::move(r));
}

// `text` is called only when the passes are dumped or logged: a kernel's
// text is not built for nothing. `graph`: the pass's result when it is one.
template <typename Text>
void log_pass(const std::string &kernel, const char *pass, const Text &text, const UOpRef &graph = nullptr) {
  if (knobs::debug() >= 4) std::cerr << "--- " << kernel << " after " << pass << "\n" << text();
  if (t_pass_log.log) record_pass(pass, text(), graph);
}

// The DEFINE_VARs `ast` reads, by slot.
std::vector<UOpRef> kernel_vars(const UOpRef &ast) {
  std::vector<UOpRef> vars;
  for (auto &u : uop::toposort(ast))
    if (u->op == Op::DefineVar) vars.push_back(u);
  std::sort(vars.begin(), vars.end(),
            [](const UOpRef &a, const UOpRef &b) { return a->arg_as<int64_t>() < b->arg_as<int64_t>(); });
  return vars;
}

KernelSpec passes(const UOpRef &ast, const std::string &name, std::vector<DType> buf_dtypes,
                  const std::shared_ptr<const schedule::GemmShape> &gemm, const Upcast *forced, const Target &t);

// A sort is a library kernel: one call per line, split across threads.
KernelSpec library_kernel(const UOpRef &value, const std::string &name, std::vector<DType> buf_dtypes) {
  KernelSpec p;
  p.name = name;
  p.buf_dtypes = std::move(buf_dtypes);
  p.library = value;
  const Shape &shape = uop::shape_of(value);
  const int64_t axis = value->arg_as<uop::ReduceArg>().axes.at(0);
  const int64_t lines = shape::prod(shape) / std::max<int64_t>(1, shape[static_cast<size_t>(axis)]);
  p.global_range = UOp::make(Op::Range, DType::Int64, {UOp::const_int(lines)}, int64_t{0});
  p.iterations = shape::prod(shape);
  return p;
}

// A GEMM as a template, the AST itself the library kernel: of halves on
// tensor cores (one item per output), of float32 over packed panels (`tiles`:
// gemm_tiles.h's items).
KernelSpec gemm_kernel(const UOpRef &ast, const std::shared_ptr<const schedule::GemmShape> &g,
                       const std::string &name, std::vector<DType> buf_dtypes, const GemmTiles &tiles = {}) {
  KernelSpec p;
  p.name = name;
  p.buf_dtypes = std::move(buf_dtypes);
  p.library = ast;
  p.gemm = g;
  p.tiles = tiles;
  const int64_t outputs = shape::prod(g->batch) * g->m * g->n;
  const int64_t items = tiles.rows ? gemm_items(*g, tiles) : outputs;
  p.global_range = UOp::make(Op::Range, DType::Int64, {UOp::const_int(items)}, int64_t{0});
  p.iterations = outputs * g->k;
  p.work = 2 * p.iterations;  // a multiply and an add per term, as the loop nest counts them
  return p;
}

// The GEMM templates read B in place or through views they can index (a
// gathered B, codegen/gemm_gather.h), A in place or, the tensor-core one
// (`gathers_a`), so too.
bool template_reads(const schedule::GemmShape &g, bool gathers_a = false) {
  return (!g.a.view || (gathers_a && gather_index(g, false))) && (!g.b.view || gather_index(g, true));
}

bool tensor_core_gemm(const schedule::GemmShape *g, const Target &t) {
  return t.tensor_cores && !knobs::noopt() && g && g->in != DType::Float32 && template_reads(*g, true);
}
// (An empty product, k = 0, stays lowered: its loops store the zeros; so
// does one with an epilogue, which the C template does not compute.)
bool packed_gemm(const schedule::GemmShape *g, const Target &t) {
  return t.packed_gemm && !knobs::noopt() && g && g->in == DType::Float32 && g->m > 0 && g->n > 0 && g->k > 0 &&
         !g->epilogue && template_reads(*g);
}

}  // namespace

bool from_template(const schedule::ScheduleItem &item, const Target &t) {
  return item.ast->src[0]->src[1]->op == Op::Sort || tensor_core_gemm(item.gemm.get(), t) ||
         packed_gemm(item.gemm.get(), t);
}

void set_pass_log(PassLog *log) {
  t_pass_log.log = log;
  t_pass_log.last_graph = nullptr;
  t_pass_log.rules.clear();
  uop::count_rules(log ? &t_pass_log.rules : nullptr);
}

UOpRef optimize_input(const UOpRef &ast, const Target &t) {
  if (knobs::noopt()) return ast;
  const UOpRef merged = merge_axes(ast);
  return t.block ? block_columns(merged) : merged;
}

KernelSpec kernel_spec(const schedule::ScheduleItem &item, const Upcast *forced, const Target &t) {
  const size_t logged = t_pass_log.log ? t_pass_log.log->size() : 0;
  KernelSpec p = passes(item.ast, item.name, schedule::buf_dtypes(item), item.gemm, forced, t);
  p.launch = plan_launch(p, t);
  if (p.launch.grouped && t.two_level_sums) {  // Target::two_level_sums: the passes again, sums in one level
    Target one = t;
    one.two_level_sums = false;
    PassLog first;  // the log keeps the passes of the kept program only
    if (t_pass_log.log) {
      first.assign(t_pass_log.log->begin() + static_cast<std::ptrdiff_t>(logged), t_pass_log.log->end());
      t_pass_log.log->resize(logged);
    }
    KernelSpec q = passes(item.ast, item.name, schedule::buf_dtypes(item), item.gemm, forced, one);
    q.launch = plan_launch(q, one);
    if (q.launch.grouped) {
      p = std::move(q);
    } else if (t_pass_log.log) {  // not grouped so (not seen): the first program stands
      t_pass_log.log->resize(logged);
      t_pass_log.log->insert(t_pass_log.log->end(), first.begin(), first.end());
    }
  }
  p.vars = kernel_vars(item.ast);
  return p;
}

namespace {
KernelSpec passes(const UOpRef &ast, const std::string &name, std::vector<DType> buf_dtypes,
                  const std::shared_ptr<const schedule::GemmShape> &gemm, const Upcast *forced, const Target &t) {
  if (t_pass_log.log) t_pass_log.last_graph = nullptr;  // each kernel's first pass changes nothing
  log_pass(name, "schedule (AST)", [&] { return ast->str(); }, ast);
  if (ast->src[0]->src[1]->op == Op::Sort) return library_kernel(ast->src[0]->src[1], name, std::move(buf_dtypes));
  if (tensor_core_gemm(gemm.get(), t)) return gemm_kernel(ast, gemm, name, std::move(buf_dtypes));
  if (packed_gemm(gemm.get(), t)) {
    const GemmTiles tiles = gemm_tiles(*gemm, t);
    log_pass(name, "packed GEMM", [&] { return gemm_tiles_str(tiles); });
    return gemm_kernel(ast, gemm, name, std::move(buf_dtypes), tiles);
  }
  const UOpRef kernel = optimize_input(ast, t);
  if (kernel != ast) log_pass(name, "merge axes, block", [&] { return kernel->str(); }, kernel);
  const Upcast up = forced ? *forced : knobs::noopt() ? Upcast{} : optimize(kernel, t);
  const int64_t lanes = knobs::noopt() ? 1 : sum_lanes(kernel, up, t);
  log_pass(name, forced ? "optimize (given)" : "optimize", [&] {
    return upcast_str(up) + (lanes > 1 ? "sum lanes " + std::to_string(lanes) + "\n" : "");
  });
  LoweredKernel lowered = lower(kernel, up, !knobs::noopt(), lanes, t.two_level_sums);
  log_pass(name, "lower", [&] { return lowered.sink->str(); }, lowered.sink);
  if (!knobs::noopt() && t.vectors != Vectors::None) {
    lowered = vectorize(lowered, up, t.vectors, t.vector_bytes / 4);
    log_pass(name, "vectorize", [&] { return lowered.sink->str(); }, lowered.sink);
  }
  if (!knobs::noopt() && t.atomic_add) {
    lowered = atomic_writes(lowered, t);
    log_pass(name, "atomic writes", [&] { return lowered.sink->str(); }, lowered.sink);
  }
  if (!knobs::noopt() && t.fma) {
    lowered = fuse_multiply_add(lowered);
    log_pass(name, "multiply-add", [&] { return lowered.sink->str(); }, lowered.sink);
  }
  KernelSpec p = linearize(lowered, name, std::move(buf_dtypes));
  log_pass(name, "linearize", [&] { return program_str(p); });
  return p;
}
}  // namespace

}  // namespace loom::codegen
