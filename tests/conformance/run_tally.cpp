// SPDX-License-Identifier: Apache-2.0
// tests/conformance/run_tally.cpp — the Catch listener and exit code of run_tally.hpp.
#include "conformance/run_tally.hpp"

// Catch2 2 declares its listener base class only with the external interfaces.
#define CATCH_CONFIG_EXTERNAL_INTERFACES
#include <cstdio>
#include <set>

#include "support/catch.hpp"

namespace vgpu_test {
namespace {

RunTally g_tally;

// Counts the test cases that run and those that fail (Catch's reporters are left as they are).
class TallyListener : public Catch::EventListenerBase {
 public:
  using Base = Catch::EventListenerBase;
  using Base::Base;
  void testRunStarting(const Catch::TestRunInfo& info) override {
    Base::testRunStarting(info);
    g_tally.started = true;
  }
  void testCaseEnded(const Catch::TestCaseStats& stats) override {
    Base::testCaseEnded(stats);
    ++g_tally.cases;
    if (stats.totals.assertions.failed > 0 || stats.totals.testCases.failed > 0) ++g_tally.failed;
  }
};

}  // namespace

CATCH_REGISTER_LISTENER(TallyListener)

RunTally run_tally() { return g_tally; }

int conformance_exit_code(int catch_result, const std::vector<std::string>& catch_args, const RunTally& tally) {
  if (!tally.started) {
    // Catch only listed (its result is then the number listed in Catch2 2), or it refused an
    // argument (it printed why).
    static const std::set<std::string> listing = {
        "-l", "--list-tests", "-t", "--list-tags", "--list-reporters", "--list-test-names-only", "--list-listeners"};
    for (std::size_t i = 1; i < catch_args.size(); ++i)
      if (listing.count(catch_args[i])) return 0;
    return catch_result == 0 ? 0 : 2;
  }
  if (tally.cases == 0) {
    std::fprintf(stderr,
                 "conformance: no test case ran: the test spec matched none. Fix: pick names or tags that "
                 "`vgpu-conformance --list` shows (or give none to run every case)\n");
    return 2;
  }
  return tally.failed > 0 || catch_result != 0 ? 1 : 0;
}

}  // namespace vgpu_test
