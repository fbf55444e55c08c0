// SPDX-License-Identifier: Apache-2.0
// tests/catch_main.cpp — Catch2's implementation and main(), compiled once into the static
// library vgpu_catch_main (compiling it takes ~40 s; each test file then only includes the
// header). main is weak, and run_catch_session() is exported, so that vgpu-conformance can
// link this library and still supply its own main() (which reports unavailable backends as
// skips before handing over to Catch). Every session watches for Vulkan validation messages
// (support/validation_watch.hpp) and fails when one was logged.
#pragma weak main
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "support/catch_session.hpp"
#include "support/validation_watch.hpp"

int vgpu_test::run_catch_session(int argc, char* argv[]) {
  vgpu_test::watch_validation();
  const int result = Catch::Session().run(argc, argv);
  return vgpu_test::validation_verdict(result);
}

int main(int argc, char* argv[]) { return vgpu_test::run_catch_session(argc, argv); }
