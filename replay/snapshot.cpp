#include "snapshot.h"

#include <algorithm>
#include <sstream>

#include "engine/realize.h"

namespace loom::replay {

std::string snapshot(const Program &p) {
  std::ostringstream os;
  os << "# program " << p.name << "\n";
  std::vector<uop::UOpRef> outs;
  try {
    for (const Tensor &t : p.build()) outs.push_back(t.contiguous().uop());
  } catch (const Error &e) {
    os << "# error " << e.what() << "\n";
    return os.str();
  }
  auto kernels = engine::render(outs);
  os << "# kernels " << kernels.size() << "\n";
  for (size_t i = 0; i < kernels.size(); i++) {
    const auto &k = kernels[i];
    os << "=== kernel " << i << " " << k.name << "\n--- ast\n" << k.ast;
    if (!k.bound.empty()) os << "--- bound " << k.bound << "\n";
    os << "--- linear\n" << k.linear
       << "--- c\n" << k.c_source << "--- cuda " << k.cuda_blocks << "x" << k.cuda_threads << "\n" << k.cuda_source;
  }
  return os.str();
}

std::vector<std::string> split_kernels(const std::string &text) {
  std::vector<std::string> out;
  std::istringstream is(text);
  std::string line;
  while (std::getline(is, line)) {
    if (line.rfind("=== kernel ", 0) == 0) out.emplace_back();
    if (!out.empty()) out.back() += line + "\n";
  }
  return out;
}

namespace {
std::vector<std::string> lines_of(const std::string &s) {
  std::vector<std::string> v;
  std::istringstream is(s);
  std::string l;
  while (std::getline(is, l)) v.push_back(l);
  return v;
}
}  // namespace

std::string unified_diff(const std::string &a, const std::string &b, const std::string &a_name,
                         const std::string &b_name) {
  if (a == b) return "";
  auto x = lines_of(a), y = lines_of(b);
  size_t n = x.size(), m = y.size();
  // LCS table; kernels are a few hundred lines at most.
  std::vector<std::vector<uint32_t>> lcs(n + 1, std::vector<uint32_t>(m + 1, 0));
  for (size_t i = n; i-- > 0;)
    for (size_t j = m; j-- > 0;)
      lcs[i][j] = x[i] == y[j] ? lcs[i + 1][j + 1] + 1 : std::max(lcs[i + 1][j], lcs[i][j + 1]);
  struct Edit {
    char tag;  // ' ', '-', '+'
    size_t ai, bi;
  };
  std::vector<Edit> edits;
  size_t i = 0, j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && x[i] == y[j]) edits.push_back({' ', i++, j++});
    else if (i < n && (j == m || lcs[i + 1][j] >= lcs[i][j + 1])) edits.push_back({'-', i++, j});
    else edits.push_back({'+', i, j++});
  }
  std::ostringstream os;
  os << "--- " << a_name << "\n+++ " << b_name << "\n";
  const size_t ctx = 3;
  for (size_t k = 0; k < edits.size();) {
    if (edits[k].tag == ' ') {
      k++;
      continue;
    }
    // A hunk: changes closer than 2*ctx unchanged lines share one.
    size_t start = k >= ctx ? k - ctx : 0, last = k;
    for (size_t e = k + 1; e < edits.size() && e <= last + 2 * ctx; e++)
      if (edits[e].tag != ' ') last = e;
    size_t end = std::min(edits.size(), last + ctx + 1);
    size_t a0 = edits[start].ai, b0 = edits[start].bi, ac = 0, bc = 0;
    for (size_t e = start; e < end; e++) {
      ac += edits[e].tag != '+';
      bc += edits[e].tag != '-';
    }
    os << "@@ -" << a0 + 1 << "," << ac << " +" << b0 + 1 << "," << bc << " @@\n";
    for (size_t e = start; e < end; e++)
      os << edits[e].tag << (edits[e].tag == '+' ? y[edits[e].bi] : x[edits[e].ai]) << "\n";
    k = end;
  }
  return os.str();
}

}  // namespace loom::replay
