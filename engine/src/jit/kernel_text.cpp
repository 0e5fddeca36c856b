#include "jit/kernel_text.h"

#include <cstdio>
#include <unordered_map>

#include "loom/error.h"
#include "uop/uop.h"

namespace loom::jit {

using uop::Op;
using uop::UOp;
using uop::UOpRef;

KernelText kernel_text(const engine::ExecItem &e) {
  KernelText k{e.name, {}, {}};
  std::unordered_map<const UOp *, size_t> ids;
  for (const UOpRef &u : uop::toposort(e.ast)) {
    ids.emplace(u.get(), ids.size());
    k.structure += std::to_string(static_cast<int>(u->op)) + ":" + std::to_string(static_cast<int>(u->dtype));
    for (auto &s : u->src) k.structure += "," + std::to_string(ids.at(s.get()));
    if (u->op == Op::Const) k.constants.push_back(u->const_value());
    else k.structure += " " + uop::arg_str(u->arg);
    k.structure += ";";
  }
  for (const UOpRef &p : e.params)
    if (!p->arg_as<uop::Param>().tag) k.constants.push_back(p->const_value());
  for (int64_t s : e.shifts) k.constants.push_back(static_cast<double>(s));
  return k;
}

std::vector<KernelText> kernel_texts(const engine::Capture &capture) {
  std::vector<KernelText> out;
  for (auto &st : capture.steps)
    if (st.kernel) out.push_back(kernel_text(*st.kernel));
  return out;
}

void check_baked_numbers(const std::vector<KernelText> &first, const std::vector<KernelText> &now,
                         const std::string &who) {
  if (now.size() != first.size()) return;
  for (size_t i = 0; i < now.size(); i++) {
    const KernelText &a = first[i], &b = now[i];
    if (a.structure != b.structure) continue;
    size_t c = 0;
    while (c < a.constants.size() && same_number(a.constants[c], b.constants[c])) c++;
    if (c == a.constants.size()) continue;
    throw Error(who + ": the number " + number_str(a.constants[c]) + " in kernel " + b.name + " on call 1 is " +
                number_str(b.constants[c]) + " on call 2; a value that changes between calls must be passed as a "
                "scalar, or it stays baked into the capture");
  }
}

bool same_number(double a, double b) { return a == b || (a != a && b != b); }

std::string number_str(double v) {
  char s[32];
  std::snprintf(s, sizeof s, "%.9g", v);
  return s;
}

}  // namespace loom::jit
