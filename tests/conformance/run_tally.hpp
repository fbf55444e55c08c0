// SPDX-License-Identifier: Apache-2.0
// tests/conformance/run_tally.hpp — what a conformance session ran, counted by a Catch listener,
// and the runner's exit code made from it: 0 passed, 1 failed, 2 bad arguments or nothing ran
// (77, a skip, is main()'s). Catch's own code (failed assertions, or 0 when a filter matched
// nothing) would collide with 2 and 77. Thread-safety: read after the session, on its thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace vgpu_test {

/// What one Catch session ran.
struct RunTally {
  bool started = false;      ///< the test run began (false: Catch's arguments were bad, or it only listed)
  std::uint64_t cases = 0;   ///< test cases that ran
  std::uint64_t failed = 0;  ///< of those, cases with a failed assertion or an unexpected exception
};

/// Returns the tally of the session run so far.
RunTally run_tally();

/// Returns the runner's exit code for a session that returned catch_result with catch_args
/// (argv[0] first): 0 when every case that ran passed, 1 when one failed (or the session
/// failed otherwise, e.g. a Vulkan validation message), 2 when Catch refused its arguments or
/// no test case ran (the filter matched none; why is printed on stderr with a Fix).
int conformance_exit_code(int catch_result, const std::vector<std::string>& catch_args, const RunTally& tally);

}  // namespace vgpu_test
