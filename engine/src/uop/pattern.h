// Pattern matching and graph rewriting. Rules are data: (UPat, callback)
// pairs in a PatternMatcher; callbacks return nullptr to decline.
#pragma once
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "uop/uop.h"

namespace loom::uop {

// Where a rule was written: the line of its pattern's first factory call
// (UPat::var, op, ...), which each takes as a defaulted argument. Not std::source_location: clang 14 (the
// sanitizer and libFuzzer build's compiler) lacks it with libstdc++ 12; the
// builtins give the same call-site file and line under g++ and clang.
struct RuleLocation {
  const char *file = "";
  unsigned line = 0;
  static constexpr RuleLocation current(const char *f = __builtin_FILE(), unsigned l = __builtin_LINE()) {
    return {f, l};
  }
};

class UPat {
 public:
  static UPat var(std::string name = "", RuleLocation at = RuleLocation::current());  // any node
  static UPat cvar(std::string name = "", RuleLocation at = RuleLocation::current());  // any Const
  static UPat op(Op op, std::vector<UPat> src = {}, std::string name = "", RuleLocation at = RuleLocation::current());
  static UPat ops(std::vector<Op> ops, std::vector<UPat> src = {}, std::string name = "",
                  RuleLocation at = RuleLocation::current());

  std::optional<std::vector<Op>> ops_;
  std::optional<std::vector<UPat>> src_;  // nullopt: any sources
  std::string name_;
  RuleLocation loc_;
};

// Binary ALU patterns read like the rules they match.
UPat operator+(const UPat &a, const UPat &b);
UPat operator*(const UPat &a, const UPat &b);
UPat operator+(const UPat &a, int64_t c);  // matches a Const equal to c
UPat operator*(const UPat &a, int64_t c);
UPat const_pat(int64_t c);

class Match {
 public:
  const UOpRef &operator[](const std::string &name) const;
  void bind(const std::string &name, const UOpRef &u) { vars_.emplace_back(name, u); }
  bool bound_to(const std::string &name, const UOpRef &u) const;
  size_t size() const { return vars_.size(); }
  void truncate(size_t n) { vars_.resize(n); }
  UOpRef root;

 private:
  std::vector<std::pair<std::string, UOpRef>> vars_;
};

using RewriteFn = std::function<UOpRef(const Match &)>;

struct Rule {
  UPat pat;
  RewriteFn fn;
  RuleLocation loc;
  Rule(UPat p, RewriteFn f) : pat(std::move(p)), fn(std::move(f)), loc(pat.loc_) {}
};

class PatternMatcher {
 public:
  PatternMatcher(std::vector<Rule> rules);
  PatternMatcher operator+(const PatternMatcher &o) const;
  // The first rule that matches `u` and does not decline, or nullptr.
  UOpRef rewrite(const UOpRef &u) const;

 private:
  std::vector<Rule> rules_;
};

// While set on this thread, each rule that rewrites a node adds one to its
// count here, keyed "file:line" (where the rule was written); nullptr stops.
using RuleCounts = std::vector<std::pair<std::string, int64_t>>;
void count_rules(RuleCounts *counts);

// Rewrites bottom-up until no rule applies anywhere (memoized per node).
UOpRef graph_rewrite(const UOpRef &root, const PatternMatcher &pm);

}  // namespace loom::uop
