// What the viewer records (loom/viz.h): the scheduler's explanation of a cut,
// the codegen passes with the nodes each changed and the rules that fired,
// and the trace's counts against run_stats().
#include <gtest/gtest.h>

#include <string>

#include "codegen/pipeline.h"
#include "loom/tensor.h"
#include "loom/viz.h"
#include "schedule/explain.h"
#include "schedule/schedule.h"
#include "uop/pattern.h"

namespace loom {
namespace {

using schedule::Explanation;

struct Explaining {
  Explaining() { schedule::set_explaining(true); }
  ~Explaining() { schedule::set_explaining(false); }
};

int64_t count(const std::string &s, const std::string &what) {
  int64_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) n++;
  return n;
}

TEST(Explain, SoftmaxCutsAtItsReductionsWithReasons) {
  Explaining on;
  Tensor x = Tensor::from_vector(std::vector<double>(24, 0.5), {4, 6});
  x.realize();
  const Tensor e = (x - x.amax({1}, true)).exp();
  const schedule::Schedule s = schedule::create_schedule({(e / e.sum({1}, true)).uop()});
  ASSERT_TRUE(s.explanation);
  const Explanation &g = *s.explanation;
  EXPECT_EQ(g.groups.size(), s.items.size());  // one kernel per realized node here
  int realized = 0;
  std::string reasons;
  for (size_t i = 0; i < g.nodes.size(); i++) {
    const schedule::ExplainedNode &n = g.nodes[i];
    realized += !n.why.empty();
    if (!n.why.empty()) reasons += n.op + ": " + n.why + "\n";
    if (n.op != "BUFFER" && n.op != "CONST" && n.op != "SINK") {
      EXPECT_FALSE(n.groups.empty()) << n.op;
    }
    for (int src : n.src) EXPECT_LT(src, static_cast<int>(i));  // topological order
  }
  EXPECT_EQ(realized, static_cast<int>(g.groups.size()));
  // The max and the sum are each read through a broadcast (keepdim, then expanded).
  EXPECT_EQ(count(reasons, "REDUCE_AXIS: holds a reduction and is read through a view that is not a reshape"), 2)
      << reasons;
  EXPECT_EQ(count(reasons, "DIV: an output of the realize"), 1) << reasons;
  ASSERT_EQ(g.passes.size(), 3u);  // cut, gemms, reductions
  EXPECT_EQ(g.passes[0].pass, "cut");
  EXPECT_EQ(g.passes[0].kernels.size(), s.items.size());
  // The same structure again: a schedule-cache hit shares the explanation.
  const Tensor e2 = (x - x.amax({1}, true)).exp();
  const schedule::Schedule again = schedule::create_schedule({(e2 / e2.sum({1}, true)).uop()});
  EXPECT_TRUE(again.cached);
  EXPECT_EQ(again.explanation, s.explanation);
}

TEST(Explain, OffByDefault) {
  Tensor x = Tensor::from_vector({1.0, 2.0, 3.0}, {3});
  x.realize();
  EXPECT_FALSE(schedule::create_schedule({(x * 3).exp().uop()}).explanation);
}

TEST(PassLog, LowerChangesNodesAndNamesTheRulesThatFired) {
  Tensor x = Tensor::from_vector(std::vector<double>(24, 1.0), {4, 6});
  x.realize();
  const schedule::Schedule s = schedule::create_schedule({x.permute({1, 0}).sum({1}).uop()});
  ASSERT_EQ(s.items.size(), 1u);
  codegen::PassLog log;
  codegen::set_pass_log(&log);
  codegen::kernel_spec(s.items[0]);
  codegen::set_pass_log(nullptr);
  ASSERT_GE(log.size(), 3u);
  EXPECT_EQ(log.front().pass, "schedule (AST)");
  EXPECT_TRUE(log.front().changed.empty());  // the first pass has nothing to compare with
  const codegen::PassRecord *lower = nullptr;
  for (auto &p : log)
    if (p.pass == "lower") lower = &p;
  ASSERT_NE(lower, nullptr);
  EXPECT_FALSE(lower->changed.empty());
  for (int line : lower->changed) EXPECT_LT(line, count(lower->text, "\n"));
  ASSERT_FALSE(lower->rules.empty());  // index arithmetic simplified by the symbolic rules
  for (auto &[where, n] : lower->rules) {
    EXPECT_EQ(where.rfind("uop/symbolic.cpp:", 0), 0u) << where;
    EXPECT_NE(where, "uop/symbolic.cpp:0");
    EXPECT_GT(n, 0);
  }
}

TEST(PassLog, RulesAreLocatedWhereTheirPatternIsWritten) {
  using P = uop::UPat;
  const unsigned first = __LINE__ + 2;
  const uop::PatternMatcher pm({
      {P::var("x") * 1, [](const uop::Match &m) { return m["x"]; }},
      {P::op(uop::Op::Neg, {P::op(uop::Op::Neg, {P::var("x")})}), [](const uop::Match &m) { return m["x"]; }},
  });
  const uop::UOpRef v = uop::UOp::make(uop::Op::DefineVar, DType::Int64, {}, int64_t{0});
  const uop::UOpRef g = uop::alu(uop::Op::Neg, uop::alu(uop::Op::Neg, uop::alu(uop::Op::Mul, v, uop::UOp::const_int(1))));
  uop::RuleCounts counts;
  uop::count_rules(&counts);
  EXPECT_EQ(uop::graph_rewrite(g, pm), v);
  uop::count_rules(nullptr);
  ASSERT_EQ(counts.size(), 2u);
  EXPECT_EQ(counts[0].first, "engine/viz_test.cpp:" + std::to_string(first));
  EXPECT_EQ(counts[1].first, "engine/viz_test.cpp:" + std::to_string(first + 1));
  EXPECT_EQ(counts[0].second, 1);
  EXPECT_EQ(counts[1].second, 1);
}

TEST(Viz, TraceCountsMatchRunStats) {
  Tensor x = Tensor::from_vector(std::vector<double>(24, 0.25), {4, 6});
  (x * 7.0).exp().sum({1}).realize();  // the structure is cut before recording: start() has it cut again
  viz::start();
  reset_run_stats();
  for (int step = 0; step < 3; step++) {
    Tensor y = (x * (step + 2.0)).exp().sum({1});
    y.realize();
  }
  const RunStats st = run_stats();
  const std::string json = viz::trace_json();
  viz::stop();
  EXPECT_FALSE(viz::recording());
  EXPECT_EQ(count(json, "\"start\":"), st.schedules);  // one record per realize that ran kernels
  EXPECT_EQ(count(json, "\"cached\":true"), st.schedule_hits);
  EXPECT_EQ(st.schedule_hits, st.schedules - 1);  // cut again after start(), then hits
  EXPECT_EQ(count(json, "\"graph\":0"), st.schedules);  // one structure: three realizes of it
  const size_t launches = json.find("\"launches\":[");
  ASSERT_NE(launches, std::string::npos);
  EXPECT_EQ(count(json.substr(launches, json.find("]]", launches) - launches), "[") - 1, st.kernels_run);
  EXPECT_EQ(count(json, "\"pass\":\"lower\""), 1);  // the kernel was lowered once, runtime scalar and all
  EXPECT_NE(json.find("\"why\":\"an output of the realize\""), std::string::npos);
}

}  // namespace
}  // namespace loom
