// SPDX-License-Identifier: Apache-2.0
// tests/conformance/runner_check_test.cpp — two test cases that fail on purpose, hidden (tag
// [.runner-check]: they run only when named), so that conformance.cli can check that a run with
// failures exits 1, not the number of failures (two here: the "bad arguments" code). A driver
// validator's run never includes them.
#include "support/catch.hpp"

TEST_CASE("runner check: a case that fails on purpose", "[.runner-check]") { CHECK(1 + 1 == 3); }

TEST_CASE("runner check: another case that fails on purpose", "[.runner-check]") { CHECK(2 + 2 == 5); }
