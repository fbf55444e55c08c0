// SPDX-License-Identifier: Apache-2.0
// tests/catch_main.cpp — the tests' Catch session, in the static library vgpu_catch_main; with
// Catch2 2 also Catch's implementation, compiled once here (it takes ~40 s; each test file
// then only includes the header; Catch2 3 ships it compiled, as Catch2::Catch2). The default
// main() is the library's other member (catch_default_main.cpp), which the linker takes only
// for a program without its own, so that vgpu-conformance can link this library and still
// supply its own main() (which reports unavailable backends as skips before handing over to
// Catch) — on every linker, PE's included, which has no weak definitions to choose by. Every
// session watches for Vulkan validation messages (support/validation_watch.hpp) and fails
// when one was logged.
// Catch2 2: the implementation without its main (Catch2 3 ignores it).
#define CATCH_CONFIG_RUNNER
#include "support/catch.hpp"

#include "support/catch_session.hpp"
#include "support/validation_watch.hpp"

int vgpu_test::run_catch_session(int argc, char* argv[]) {
  vgpu_test::watch_validation();
  const int result = Catch::Session().run(argc, argv);
  return vgpu_test::validation_verdict(result);
}
