#include "rc_support.h"

#include <chrono>
#include <optional>
#include <sstream>

#include "rapidcheck/detail/Configuration.h"
#include "rapidcheck/detail/TestListenerAdapter.h"
#include "harness.h"

namespace loom::conformance {
namespace {

using Clock = std::chrono::steady_clock;
std::optional<Clock::time_point> first_failure;

}  // namespace

std::string &program_path() {
  static std::string path = "loom_conformance";
  return path;
}

void shrink_guard() {
  if (first_failure &&
      std::chrono::duration<double>(Clock::now() - *first_failure).count() > kShrinkBudgetSeconds)
    RC_DISCARD("shrink time budget spent");
}

void fail_case(const std::string &report) {
  if (rehearsing()) return;
  if (!first_failure) first_failure = Clock::now();
  RC_FAIL(report);
}

void run_property(const rc::detail::Property &property, double case_fraction) {
  using namespace rc::detail;
  const auto *info = ::testing::UnitTest::GetInstance()->current_test_info();
  const std::string id = std::string(info->test_suite_name()) + "." + info->name();
  first_failure.reset();
  TestMetadata metadata;
  metadata.id = id;
  metadata.description = id;
  TestParams params = configuration().testParams;
  params.maxSuccess = std::max(1, static_cast<int>(params.maxSuccess * case_fraction));
  TestListenerAdapter listener;
  compile_cases_ahead([&] {
    TestParams rehearsal = params;
    rehearsal.disableShrinking = true;  // a rehearsal fails no case; were one to throw, no shrinking
    checkProperty(property, metadata, rehearsal, listener, configuration().reproduce);
  });
  const TestResult result = checkProperty(property, metadata, params, listener, configuration().reproduce);
  first_failure.reset();
  if (result.is<SuccessResult>()) {
    if (!result.get<SuccessResult>().distribution.empty()) printResultMessage(result, std::cout);
    std::cout << std::endl;
    return;
  }
  std::ostringstream msg;
  printResultMessage(result, msg);
  FailureResult failure;
  if (result.match(failure)) {
    Configuration repro;
    repro.reproduce[id] = failure.reproduce;
    msg << "\n\nreproduce: RC_PARAMS=\"" << configToMinimalString(repro) << "\" " << program_path()
        << " --gtest_filter='" << id << "'\n";
  }
  ADD_FAILURE() << msg.str();
}

}  // namespace loom::conformance
