// Kernels of two calls compared without holding their graphs (which would
// keep lazy nodes alive): a number baked into a kernel that changes between
// the call a JIT runs eagerly and the one it captures would stay at its
// captured value on every replay.
#pragma once
#include <string>
#include <vector>

#include "engine/capture.h"

namespace loom::jit {

// A kernel's AST as text with its constants apart: the runtime scalars its
// launch binds (but a scalar input's, tagged: bound on every replay) and
// where its views start count as constants.
struct KernelText {
  std::string name, structure;
  std::vector<double> constants;
};
KernelText kernel_text(const engine::ExecItem &e);
std::vector<KernelText> kernel_texts(const engine::Capture &capture);

// Throws loom::Error naming `who` when a kernel of `now` has the structure
// of the one at its position in `first` and another constant.
void check_baked_numbers(const std::vector<KernelText> &first, const std::vector<KernelText> &now,
                         const std::string &who);

bool same_number(double a, double b);  // equal, or both NaN
std::string number_str(double v);      // as an error message shows it (%.9g)

}  // namespace loom::jit
