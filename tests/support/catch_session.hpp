// SPDX-License-Identifier: Apache-2.0
// tests/support/catch_session.hpp — run Catch's test session from a custom main() without
// compiling Catch's implementation a second time (it lives in vgpu_catch_main).
#pragma once

namespace vgpu_test {

/// Runs every selected test case (Catch::Session().run) and returns the process exit code.
int run_catch_session(int argc, char* argv[]);

}  // namespace vgpu_test
