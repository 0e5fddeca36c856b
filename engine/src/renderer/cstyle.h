// The C-family renderer base: a linearized KernelSpec becomes one function. The
// base walks the UOp list and renders each UOp through two rule tables keyed
// by op: statements (loops, accumulators, stores, value definitions) and
// expressions (loads, casts, ALU). A target (c_renderer.h, cuda_renderer.h)
// supplies the types, the function header, the outermost loop and the
// constants' spelling, and may replace rows of either table.
#pragma once
#include <functional>
#include <sstream>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "codegen/linearize.h"

namespace loom::renderer {

using uop::Op;
using uop::UOpRef;

class CStyleRenderer {
 public:
  virtual ~CStyleRenderer() = default;
  std::string render(const codegen::KernelSpec &p);
  // Straight-line code computing `value` (loads, ALU, casts and index
  // arithmetic, as lowered: codegen/lowerer.h's value_at) for a template of
  // kernel `p`: the leaves in `bound` take the names given, every other
  // node a definition, one per line after `indent`. Returns the code and
  // sets `stored` to the value as its dtype stores it in memory.
  std::string render_values(const codegen::KernelSpec &p, const UOpRef &value,
                            const std::vector<std::pair<UOpRef, std::string>> &bound, const std::string &indent,
                            std::string &stored);

  using Rule = std::function<std::string(CStyleRenderer &, const UOpRef &)>;
  using Table = std::unordered_map<Op, Rule>;

  // ---- for the rules
  std::string name_of(const UOpRef &u);                     // a rendered operand (constants inline)
  std::string def(const UOpRef &u, const std::string &prefix);  // names a new variable for u
  void bind(const UOpRef &u, const std::string &name);
  std::string operand(const UOpRef &u, int i) { return name_of(u->src[static_cast<size_t>(i)]); }
  std::string expr(const UOpRef &u);                        // u's value as an expression
  std::string define_value(const UOpRef &u);                // a new register holding expr(u)
  const codegen::KernelSpec &program() const { return *p_; }
  // An op's result rounded as the dtype rounds (halves), or wrapped to its width (integers).
  std::string rounded(DType d, const std::string &e) const;
  std::string wrapped(DType d, const std::string &e) const;
  std::string combine(Op op, DType d, const std::string &a, const std::string &b, bool round) const;
  std::string acc_identity(const UOpRef &fold) const;

  // ---- the target. The defaults are the C family's spelling: <stdint.h>
  // names, halves as 16-bit integers in memory converted by the prelude's
  // loom_h2f / loom_f2h (bfloat16: loom_bf2f / loom_f2bf), math.h's
  // NAN and INFINITY.
  virtual const char *reg_type(DType d) const;  // a value in registers (halves compute as float)
  virtual const char *mem_type(DType d) const;  // an element in memory
  virtual std::string render_const(const UOpRef &c) const;
  // A DEFINE_VAR's name: v<slot>, declared by the header from its launch argument.
  static std::string var_name(const UOpRef &v);
  virtual std::string header() = 0;                                  // signature and buffer bindings
  virtual std::string loop(const UOpRef &range, const std::string &var) = 0;  // "for (...) {"
  virtual std::string load(DType d, const std::string &ptr) const;   // memory -> register
  virtual std::string store(DType d, const std::string &v) const;    // register -> memory
  virtual std::string buffer(int64_t slot) const { return "data" + std::to_string(slot); }
  // A vector UOp (codegen/vectorize.h) or a GEP: a target without vectors has none.
  virtual std::string vector_statement(const UOpRef &u);

 protected:
  // The shared tables; a target copies and edits them to differ.
  static const Table &statement_rules();
  static const Table &expression_rules();
  virtual const Table &statements() const { return statement_rules(); }
  virtual const Table &expressions() const { return expression_rules(); }
  // One UOp's text: its vector form, its statement rule, or its value defined.
  std::string statement(const UOpRef &u);

 private:
  const codegen::KernelSpec *p_ = nullptr;
  std::ostringstream os_;
  std::unordered_map<const uop::UOp *, std::string> names_;
  int counter_ = 0;
};

}  // namespace loom::renderer
