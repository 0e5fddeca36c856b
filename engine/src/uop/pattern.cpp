#include "uop/pattern.h"

#include <unordered_map>

#include "loom/error.h"

namespace loom::uop {

UPat UPat::var(std::string name, RuleLocation at) {
  UPat p;
  p.name_ = std::move(name);
  p.loc_ = at;
  return p;
}
UPat UPat::cvar(std::string name, RuleLocation at) { return op(Op::Const, {}, std::move(name), at); }
UPat UPat::op(Op o, std::vector<UPat> src, std::string name, RuleLocation at) {
  return ops({o}, std::move(src), std::move(name), at);
}
UPat UPat::ops(std::vector<Op> os, std::vector<UPat> src, std::string name, RuleLocation at) {
  UPat p;
  p.ops_ = std::move(os);
  if (!src.empty()) p.src_ = std::move(src);
  p.name_ = std::move(name);
  p.loc_ = at;
  return p;
}

// A pattern built with operators is located where its left operand was made.
UPat operator+(const UPat &a, const UPat &b) { return UPat::op(Op::Add, {a, b}, "", a.loc_); }
UPat operator*(const UPat &a, const UPat &b) { return UPat::op(Op::Mul, {a, b}, "", a.loc_); }
UPat const_pat(int64_t c) { return UPat::cvar("__c" + std::to_string(c)); }
UPat operator+(const UPat &a, int64_t c) { return a + const_pat(c); }
UPat operator*(const UPat &a, int64_t c) { return a * const_pat(c); }

const UOpRef &Match::operator[](const std::string &name) const {
  for (auto &[n, u] : vars_)
    if (n == name) return u;
  LOOM_CHECK(false, "pattern variable '" + name + "' is not bound");
  static UOpRef none;
  return none;
}

bool Match::bound_to(const std::string &name, const UOpRef &u) const {
  for (auto &[n, v] : vars_)
    if (n == name) return v == u;
  return true;
}

namespace {

bool match(const UPat &p, const UOpRef &u, Match &m);

bool match_srcs(const std::vector<UPat> &ps, const UOpRef *srcs, Match &m) {
  for (size_t i = 0; i < ps.size(); i++)
    if (!match(ps[i], srcs[i], m)) return false;
  return true;
}

bool match(const UPat &p, const UOpRef &u, Match &m) {
  if (p.ops_) {
    bool ok = false;
    for (auto o : *p.ops_) ok |= o == u->op;
    if (!ok) return false;
  }
  // "__c<N>" names require a Const equal to N.
  if (p.name_.rfind("__c", 0) == 0) {
    if (!u->is_const() || std::holds_alternative<double>(u->arg) ||
        std::get<int64_t>(u->arg) != std::stoll(p.name_.substr(3)))
      return false;
  } else if (!p.name_.empty()) {
    if (!m.bound_to(p.name_, u)) return false;
  }
  size_t mark = m.size();
  if (!p.name_.empty() && p.name_.rfind("__c", 0) != 0) m.bind(p.name_, u);
  if (!p.src_) return true;
  if (p.src_->size() != u->src.size()) {
    m.truncate(mark);
    return false;
  }
  size_t mark2 = m.size();
  if (match_srcs(*p.src_, u->src.data(), m)) return true;
  m.truncate(mark2);
  // The matcher handles commutativity, so tables need no mirrored rules.
  if (u->src.size() == 2 && is_commutative(u->op)) {
    const UOpRef swapped[] = {u->src[1], u->src[0]};
    if (match_srcs(*p.src_, swapped, m)) return true;
  }
  m.truncate(mark);
  return false;
}

}  // namespace

PatternMatcher::PatternMatcher(std::vector<Rule> rules) : rules_(std::move(rules)) {}

PatternMatcher PatternMatcher::operator+(const PatternMatcher &o) const {
  auto r = rules_;
  r.insert(r.end(), o.rules_.begin(), o.rules_.end());
  return PatternMatcher(std::move(r));
}

namespace {
thread_local RuleCounts *t_rule_counts = nullptr;

void count_rule(const RuleLocation &loc) {
  std::string where = loc.file;
  if (const size_t src = where.rfind("/src/"); src != std::string::npos) where = where.substr(src + 5);
  where += ":" + std::to_string(loc.line);
  for (auto &[w, n] : *t_rule_counts)
    if (w == where) return void(n++);
  t_rule_counts->emplace_back(std::move(where), 1);
}
}  // namespace

void count_rules(RuleCounts *counts) { t_rule_counts = counts; }

UOpRef PatternMatcher::rewrite(const UOpRef &u) const {
  for (auto &rule : rules_) {
    Match m;
    m.root = u;
    if (!match(rule.pat, u, m)) continue;
    if (auto r = rule.fn(m); r && r != u) {
      if (t_rule_counts) count_rule(rule.loc);
      return r;
    }
  }
  return nullptr;
}

UOpRef graph_rewrite(const UOpRef &root, const PatternMatcher &pm) {
  std::unordered_map<const UOp *, UOpRef> done;
  std::vector<UOpRef> keep_alive;  // map keys must not be freed and reused mid-rewrite
  // Iterative post-order: rewrite sources first, then the node until it is stable.
  std::function<UOpRef(const UOpRef &)> visit = [&](const UOpRef &u) -> UOpRef {
    if (auto it = done.find(u.get()); it != done.end()) return it->second;
    std::vector<UOpRef> new_src;
    new_src.reserve(u->src.size());
    bool changed = false;
    for (auto &s : u->src) {
      new_src.push_back(visit(s));
      changed |= new_src.back() != s;
    }
    UOpRef cur = changed ? u->with_src(std::move(new_src)) : u;
    for (int guard = 0; guard < 1000; guard++) {
      UOpRef r = pm.rewrite(cur);
      if (!r) break;
      cur = visit(r);  // the replacement may expose new matches below it
      if (done.count(cur.get())) break;
    }
    keep_alive.push_back(u);
    done[u.get()] = cur;
    done[cur.get()] = cur;
    return cur;
  };
  return visit(root);
}

}  // namespace loom::uop
