// Main for the conformance binaries: remembers the binary's path (for the
// reproduce lines) and offers --coverage-report, the ctest step that turns the
// sweeps' per-op results into coverage.md.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "coverage.h"
#include "rc_support.h"

int main(int argc, char **argv) {
  std::error_code ec;
  const auto self = std::filesystem::canonical("/proc/self/exe", ec);
  loom::conformance::program_path() = ec ? std::string(argv[0]) : self.string();
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--coverage-report") == 0) return loom::conformance::write_coverage_report();
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
