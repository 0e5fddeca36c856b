// Tests: the program the codegen pipeline builds for a tensor's one kernel.
#pragma once
#include <gtest/gtest.h>

#include "codegen/pipeline.h"
#include "loom/tensor.h"
#include "schedule/schedule.h"

namespace loom::testing {

inline codegen::KernelSpec program_of(const Tensor &t, const codegen::Target &target) {
  const schedule::Schedule s = schedule::create_schedule({t.uop()});
  EXPECT_EQ(s.items.size(), 1u);
  return codegen::kernel_spec(s.items[0], nullptr, target);
}

}  // namespace loom::testing
