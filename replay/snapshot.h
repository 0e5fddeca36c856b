// Snapshots: the text of a program's kernels (AST, linearized program and
// rendered source per renderer), and a readable diff between two of them.
#pragma once
#include <string>
#include <vector>

#include "corpus.h"

namespace loom::replay {

// Everything the engine would compile for the program, as stable text.
std::string snapshot(const Program &p);

// A snapshot split into its kernels (header line + body), in order.
std::vector<std::string> split_kernels(const std::string &snapshot_text);

// Unified diff (3 lines of context) between two texts; empty when equal.
std::string unified_diff(const std::string &a, const std::string &b, const std::string &a_name,
                         const std::string &b_name);

}  // namespace loom::replay
