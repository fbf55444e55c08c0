// SPDX-License-Identifier: Apache-2.0
// tests/support/skip_case.hpp — the tests' one way to report that a test case cannot run here:
// "SKIPPED <case>: <why>" on stdout (ctest marks a test whose output has it as skipped where the
// test's SKIP_REGULAR_EXPRESSION says so, and tools/dev.sh lists each with its reason) and a Catch
// warning. Never a silent pass: the caller returns from the case right after.
#pragma once

#include <cstdio>
#include <string>

#include "support/catch.hpp"

namespace vgpu_test {

/// Reports the running test case as skipped, with why; the caller then returns from the case.
inline void skip_case(const std::string& why) {
  std::printf("SKIPPED %s: %s\n", Catch::getResultCapture().getCurrentTestName().c_str(), why.c_str());
  std::fflush(stdout);
  WARN("skipped: " << why);
}

}  // namespace vgpu_test
