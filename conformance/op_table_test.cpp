// The op table covers the public API, and the layout generators build what
// they claim (checked against torch alone, so these pass before the engine does).
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "layouts.h"
#include "op_table.h"
#include "reference.h"

#ifndef LOOM_SOURCE_DIR
#error "LOOM_SOURCE_DIR must point at the repository root"
#endif

namespace loom::conformance {
namespace {

// Methods that compute no values of their own: properties, realization, host I/O, RNG seeding.
// Autograd plumbing and in-place assignment are tested in engine/src/autograd.
const std::set<std::string> kNotOps = {
    "shape",     "ndim",          "numel",          "size",          "dtype",   "uop",     "str",
    "realize",   "to_host",       "item",           "from_host",     "from_vector", "manual_seed",
    "requires_grad", "requires_grad_", "is_leaf",   "grad",          "set_grad", "grad_fn_name",
    "detach",    "backward",      "assign",         "version",   "retain_grad", "retains_grad",
    // torch's checks before an in-place op (fuzz programs and python/tests compare them with torch)
    "check_in_place",
    // layout properties, compared with torch over views in python/tests/test_layout.py
    "strides",   "storage_offset", "storage_base",
    // the process's device (engine tests: Devices.*)
    "device",    "to"};

// Method names declared in `class Tensor { ... };` of tensor.h.
std::set<std::string> header_methods() {
  std::ifstream in(std::string(LOOM_SOURCE_DIR) + "/engine/include/loom/tensor.h");
  EXPECT_TRUE(in) << "cannot read tensor.h under " << LOOM_SOURCE_DIR;
  std::stringstream ss;
  ss << in.rdbuf();
  std::string src = std::regex_replace(ss.str(), std::regex("//[^\n]*"), "");
  const size_t begin = src.find("class Tensor {");
  EXPECT_NE(begin, std::string::npos) << "no `class Tensor {` in tensor.h";
  const size_t end = src.find("\n};", begin);
  // Drop inline bodies ({ return ...; }) so calls inside them do not look like declarations.
  const std::string body = std::regex_replace(src.substr(begin + 14, end - begin - 14), std::regex(R"(\{[^{}]*\})"), ";");
  // A declaration: return type, then name( ; constructors and operators are skipped.
  const std::regex decl(R"(([A-Za-z_][\w:<>,&*\s]*?)[\s&*]([a-z_][a-z0-9_]*)\s*\()");
  std::set<std::string> names;
  for (auto it = std::sregex_iterator(body.begin(), body.end(), decl); it != std::sregex_iterator(); ++it) {
    const std::string name = (*it)[2];
    if (name != "operator") names.insert(name);
  }
  return names;
}

// Free functions declared in loom/nn.h (`Tensor name(` at namespace scope);
// their entries' `method` names them like a Tensor method's.
std::set<std::string> nn_functions() {
  std::ifstream in(std::string(LOOM_SOURCE_DIR) + "/engine/include/loom/nn.h");
  EXPECT_TRUE(in) << "cannot read nn.h under " << LOOM_SOURCE_DIR;
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string src = std::regex_replace(ss.str(), std::regex("//[^\n]*"), "");
  const std::regex decl(R"((?:^|\n)Tensor\s+([a-z_][a-z0-9_]*)\s*\()");
  std::set<std::string> names;
  for (auto it = std::sregex_iterator(src.begin(), src.end(), decl); it != std::sregex_iterator(); ++it)
    names.insert((*it)[1]);
  return names;
}

// Everything public that needs an entry: Tensor methods and nn.h functions.
std::set<std::string> public_ops() {
  std::set<std::string> names = header_methods();
  const std::set<std::string> nn = nn_functions();
  EXPECT_GT(nn.size(), 15u) << "the nn.h parser found too few functions";
  names.insert(nn.begin(), nn.end());
  return names;
}

std::set<std::string> table_methods() {
  std::set<std::string> out;
  for (const OpEntry &e : op_table()) out.insert(e.method);
  return out;
}

TEST(OpTable, EveryPublicOpHasAnEntry) {
  const std::set<std::string> declared = public_ops();
  EXPECT_GT(declared.size(), 40u) << "the tensor.h parser found too few methods";
  const std::set<std::string> covered = table_methods();
  for (const std::string &m : declared) {
    EXPECT_TRUE(covered.count(m) || kNotOps.count(m))
        << m << " is declared in tensor.h (Tensor::) or nn.h (nn::) but has no op table entry (conformance/op_table_*.cpp)";
  }
}

TEST(OpTable, EntriesAreWellFormed) {
  const std::set<std::string> declared = public_ops();
  for (const OpEntry &e : op_table()) {
    SCOPED_TRACE(e.name);
    EXPECT_TRUE(declared.count(e.method)) << "entry for a method tensor.h does not declare: " << e.method;
    EXPECT_TRUE(e.engine);
    EXPECT_TRUE(e.domain);
    EXPECT_FALSE(e.dtypes.empty());
    EXPECT_EQ(e.inputs_for(DType::Float32).size(), static_cast<size_t>(e.arity));
    // Every entry asks torch, at least which inputs it accepts (random entries compare no values).
    EXPECT_TRUE(reference::knows(e.ref_op)) << "no reference op: '" << e.ref_op << "'";
  }
}

// Each layout's HostTensor geometry is the view torch builds from the same steps,
// and its values are the ones the steps select.
TEST(Layouts, MatchTheirStepsInTorch) {
  const std::vector<Shape> shapes = {{}, {5}, {2, 3}, {3, 1, 4}, {2, 0, 3}, {2, 3, 2, 2}, {1, 2, 1, 2, 1, 2}};
  uint64_t seed = 1;
  for (Layout l : kAllLayouts)
    for (const Shape &s : shapes)
      for (DType dt : {DType::Float32, DType::Int8, DType::BFloat16}) {
        SCOPED_TRACE(std::string(layout_name(l)) + " " + shape_str(s) + " " + dtype_name(dt));
        Rng rng(seed++);
        LayoutInput in = plan_layout(l, s, dt, rng);
        fill_storage(in.base, {-50, 50}, rng);
        ASSERT_EQ(in.view.shape, s);
        const HostTensor via_steps = reference::apply_view_chain(in.base, in.steps);
        const HostTensor via_view = reference::run("contiguous", {in.view});
        EXPECT_FALSE(compare(via_steps, via_view, {0, 0})) << in.str();
        const bool reversed = std::any_of(in.view.strides.begin(), in.view.strides.end(), [](int64_t x) { return x < 0; });
        if (reversed) continue;  // torch copies there; nothing to compare
        const reference::ViewInfo info = reference::view_chain_info(in.base, in.steps);
        EXPECT_EQ(info.storage_numel, in.view.storage_numel()) << in.str();
        if (shape_numel(s) > 0) {
          EXPECT_EQ(info.offset, in.view.offset) << in.str();
        }
        for (size_t d = 0; d < s.size(); ++d) {
          if (s[d] > 1) {
            EXPECT_EQ(info.strides[d], in.view.strides[d]) << in.str() << " dim " << d;
          }
        }
      }
}

}  // namespace
}  // namespace loom::conformance
