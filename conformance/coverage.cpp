#include "coverage.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include "layouts.h"
#include "op_table.h"

#ifndef LOOM_CONFORMANCE_BINARY_DIR
#define LOOM_CONFORMANCE_BINARY_DIR "."
#endif

namespace loom::conformance {
namespace fs = std::filesystem;

namespace {

std::string one_line(std::string s) {
  for (char &c : s)
    if (c == '\n' || c == '\t' || c == '|') c = ' ';
  return s.size() > 300 ? s.substr(0, 300) + "..." : s;
}

std::string cell_mark(const std::string &status) {
  if (status == "pass") return "pass";
  if (status == "fail") return "**FAIL**";
  if (status == "gap") return "**GAP**";
  if (status == "unsupported") return "unsup";
  return status;
}

}  // namespace

std::string coverage_dir() { return std::string(LOOM_CONFORMANCE_BINARY_DIR) + "/coverage"; }

void clear_sweep_results(const std::string &op) {
  std::error_code ec;
  fs::remove(coverage_dir() + "/" + op + ".tsv", ec);
}

void write_sweep_results(const std::string &op, const std::vector<CellResult> &cells) {
  fs::create_directories(coverage_dir());
  const std::string path = coverage_dir() + "/" + op + ".tsv";
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    for (const CellResult &c : cells)
      out << c.op << '\t' << c.dtype << '\t' << c.layout << '\t' << c.status << '\t' << one_line(c.detail) << '\t'
          << c.backward << '\t' << one_line(c.backward_detail) << '\n';
  }
  fs::rename(tmp, path);  // the report never sees a half-written file
}

int write_coverage_report() {
  std::vector<std::string> layouts;
  for (Layout l : kAllLayouts) layouts.push_back(layout_name(l));
  int64_t pass = 0, fail = 0, gap = 0, unsup = 0, grad_pass = 0, grad_fail = 0, grad_gap = 0, grad_none = 0;
  std::vector<std::string> missing, failures;
  std::ostringstream table;
  table << "| op | dtype | forward | backward |";
  for (const std::string &l : layouts) table << ' ' << l << " |";
  table << "\n|---|---|---|---|";
  for (size_t i = 0; i < layouts.size(); ++i) table << "---|";
  table << '\n';
  for (const OpEntry &op : op_table()) {
    std::ifstream in(coverage_dir() + "/" + op.name + ".tsv");
    if (!in) {
      missing.push_back(op.name);
      continue;
    }
    // dtype -> layout -> status, dtype order as read.
    std::vector<std::string> dtype_order;
    std::map<std::string, std::map<std::string, std::string>> cells, grad_cells;
    std::string line;
    while (std::getline(in, line)) {
      std::vector<std::string> f;
      std::stringstream ss(line);
      for (std::string x; std::getline(ss, x, '\t');) f.push_back(x);
      if (f.size() < 4) continue;
      if (!cells.count(f[1])) dtype_order.push_back(f[1]);
      cells[f[1]][f[2]] = f[3];
      if (f[3] == "pass") ++pass;
      else if (f[3] == "fail") ++fail, failures.push_back(op.name + " " + f[1] + " " + f[2] + ": " + (f.size() > 4 ? f[4] : ""));
      else if (f[3] == "gap") ++gap, failures.push_back(op.name + " " + f[1] + " " + f[2] + " gap: " + (f.size() > 4 ? f[4] : ""));
      else ++unsup;
      if (f.size() > 5 && !f[5].empty()) {
        grad_cells[f[1]][f[2]] = f[5];
        if (f[5] == "pass") ++grad_pass;
        else if (f[5] == "fail")
          ++grad_fail, failures.push_back(op.name + " " + f[1] + " " + f[2] + " backward: " + (f.size() > 6 ? f[6] : ""));
        else if (f[5] == "gap")
          ++grad_gap, failures.push_back(op.name + " " + f[1] + " " + f[2] + " backward gap: " + (f.size() > 6 ? f[6] : ""));
        else ++grad_none;
      }
    }
    // A row's summary: a failure if any cell failed; else pass if any cell passed; else what all cells are.
    auto row_mark = [](const std::map<std::string, std::string> &row) -> std::string {
      if (row.empty()) return "-";
      bool any_fail = false, any_gap = false, any_pass = false, all_unsup = true;
      for (const auto &[l, s] : row)
        any_fail |= s == "fail", any_gap |= s == "gap", any_pass |= s == "pass", all_unsup &= s == "unsupported";
      return any_fail ? "**FAIL**" : any_gap ? "**GAP**" : any_pass ? "pass" : all_unsup ? "unsup" : "n/a";
    };
    for (const std::string &dt : dtype_order) {
      const auto &row = cells[dt];
      const auto &grad_row = grad_cells[dt];
      table << "| " << op.name << " | " << dt << " | " << row_mark(row) << " | " << row_mark(grad_row) << " |";
      for (const std::string &l : layouts) {
        auto it = row.find(l);
        if (it == row.end()) it = row.find("-");  // creation ops have no input layout
        std::string mark = it == row.end() ? "." : cell_mark(it->second);
        auto g = grad_row.find(l);
        if (g == grad_row.end()) g = grad_row.find("-");
        if (g != grad_row.end()) mark += " / " + cell_mark(g->second);
        table << ' ' << mark << " |";
      }
      table << '\n';
    }
  }
  std::ostringstream summary;
  summary << "coverage: " << op_table().size() - missing.size() << " ops, " << pass + fail + gap + unsup
          << " cells: " << pass << " pass, " << fail << " fail, " << gap << " gap, " << unsup
          << " unsupported (both reject); backward " << grad_pass + grad_fail + grad_gap + grad_none << " cells: "
          << grad_pass << " pass, " << grad_fail << " fail, " << grad_gap << " gap, " << grad_none << " n/a";
  if (!missing.empty()) summary << "; " << missing.size() << " ops without sweep results";
  const auto strided = std::count_if(op_table().begin(), op_table().end(), [](const OpEntry &e) { return e.strides; });
  const auto differentiable =
      std::count_if(op_table().begin(), op_table().end(), [](const OpEntry &e) { return bool(e.backward); });
  summary << "; result strides compared with torch's for " << strided << " ops, .grad strides for "
          << differentiable;

  const std::string path = std::string(LOOM_CONFORMANCE_BINARY_DIR) + "/coverage.md";
  std::ofstream md(path);
  md << "# loom conformance coverage\n\n**" << summary.str() << "**\n\n"
     << "Each cell is one deterministic differential case against libtorch (conformance/sweep_test.cpp): "
        "op x dtype x input layout, on every dtype, inside the op's table entry or not; libtorch is asked "
        "about every cell. `pass`: matches torch. `unsup`: both reject: torch raises and the engine raises a "
        "loom::Error (naming the dtype where the dtype is outside the op's table entry; inside it, the "
        "input is one torch refuses, e.g. a write through a broadcast view or bool argmax over a dim longer "
        "than 1). `**GAP**` (a failure): the dtype is outside the entry, torch accepts "
        "it and the engine rejects it. `**FAIL**` (a failure): the values differ, or the engine accepts an "
        "input torch rejects (a dtype outside the entry included), or it raised something other than a "
        "loom::Error. Creation ops have no input layout and fill one cell per dtype. A second mark after the "
        "slash is the backward case: where the entry is differentiable and the dtype is a floating one inside "
        "it, the gradient of sum(out * w) for a random w against the .grad torch's backward() leaves in every "
        "floating input in that layout, its values and its strides (AccumulateGrad's layout contract; not for "
        "a negative-stride layout, nor where torch's half backward ran on float32 copies) (`pass` / "
        "`**FAIL**`); elsewhere torch is asked whether it gives a gradient: `n/a` "
        "only where it gives none (no floating input, an output torch does not differentiate, or torch "
        "rejects the input), `**GAP**` (a failure) where it does. The forward and backward columns sum up "
        "each row; the summary line counts failures and gaps separately. For the ops whose entry compares "
        "strides (all but view ops, whose shapes, strides and offsets ViewChainGeometry compares with "
        "torch's), a forward pass also means the result's strides equal torch's over its dims of more than "
        "one element (torch's input for a negative-stride layout is a flipped copy: not compared there).\n\n"
     << table.str();
  if (!missing.empty()) {
    md << "\n## Ops without sweep results\n\n";
    for (const std::string &m : missing) md << "- " << m << '\n';
  }
  if (!failures.empty()) {
    md << "\n## Failures\n\n";
    for (const std::string &f : failures) md << "- " << f << '\n';
  }
  std::cout << summary.str() << "\nreport: " << path << std::endl;
  for (const std::string &m : missing) std::cout << "missing sweep results for " << m << std::endl;
  return missing.empty() && fail + gap + grad_fail + grad_gap == 0 ? 0 : 1;
}

}  // namespace loom::conformance
