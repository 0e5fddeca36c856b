// RapidCheck glue: run a property inside the current GoogleTest and, on
// failure, print the counterexample and a one-line command reproducing it.
#pragma once
#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <string>

namespace loom::conformance {

// The test binary's absolute path (set by test_main.cpp), for reproduce lines.
std::string &program_path();

// Shrinking recompiles kernels for every candidate; after this many seconds
// past the first failure, remaining candidates are discarded (= treated as
// passing), which ends shrinking with the smallest failure found so far.
inline constexpr double kShrinkBudgetSeconds = 60;
// Call first in a property: discards once the shrink budget is spent.
void shrink_guard();
// Fails the current case with `report` (RC_FAIL) and starts the shrink budget
// clock; returns without failing while run_property rehearses the property.
void fail_case(const std::string &report);
// Runs `property` for the current test (id = its full gtest name), for
// case_fraction of RapidCheck's max_success cases (at least one). Its kernels
// are compiled ahead (compile_cases_ahead): the same cases run once as a
// rehearsal that fails none, then for real.
void run_property(const rc::detail::Property &property, double case_fraction = 1);

// An integer uniform in [lo, hi) at every test size (rc::gen::inRange alone
// scales with the size, so early cases would all be rank 0, bool, contiguous);
// it still shrinks towards lo.
template <typename T>
rc::Gen<T> uniform_in(T lo, T hi) {
  return rc::gen::resize(100, rc::gen::inRange<T>(lo, hi));
}

template <typename F>
void rc_check(F &&f, double case_fraction = 1) {
  run_property(rc::detail::toProperty(std::forward<F>(f)), case_fraction);
}

}  // namespace loom::conformance
