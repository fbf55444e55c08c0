// SPDX-License-Identifier: Apache-2.0
// tests/contract/main.cpp — vgpu-test-backends: the backend contract (tests/contract/) and each
// backend's own tests (tests/<backend>_test.cpp), as "<backend>.<test>" cases. ctest runs each
// case on its own with a private VGPU_CACHE_DIR (tests/CMakeLists.txt); run by hand with no
// arguments (as tools/gpu-run.sh does), every case runs on every backend found here.
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "contract/contract.hpp"
#include "support/catch_session.hpp"

#ifndef VGPU_TEST_TMP_ROOT
#error "VGPU_TEST_TMP_ROOT must be defined by the build"
#endif

namespace {
// Sets the environment variable name to value unless it is set (setenv(name, value, 0); the
// Windows C runtime has no setenv, only _putenv_s).
void default_env(const char* name, const char* value) {
  if (std::getenv(name) != nullptr) return;
#if defined(_WIN32)
  ::_putenv_s(name, value);
#else
  ::setenv(name, value, 0);
#endif
}
}  // namespace

// Lists and help run as usual. Otherwise a run whose every selected case was skipped (no such
// device here, as when ctest runs one CUDA case on a machine without CUDA) exits 77, ctest's
// SKIP_RETURN_CODE: a reported skip, never a pass.
int main(int argc, char* argv[]) {
  bool listing = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg.starts_with("--list") || arg == "-l" || arg == "-t" || arg == "-h" || arg == "-?" || arg == "--help")
      listing = true;
  }
  if (listing) return vgpu_test::run_catch_session(argc, argv);
  // Run by hand, the tests that plant entries in the process's L2 store must not touch the
  // user's real caches: default them to the build tree, before anything reads them.
  default_env("VGPU_CACHE_DIR", VGPU_TEST_TMP_ROOT "/default-cache");
  default_env("MESA_SHADER_CACHE_DIR", VGPU_TEST_TMP_ROOT "/mesa");
  const int result = vgpu_test::run_catch_session(argc, argv);
  const auto [run, skipped] = vgpu_test::contract::cases_run_and_skipped();
  if (skipped > 0) std::printf("backend tests: %d of %d cases skipped (see SKIPPED lines)\n", skipped, run);
  if (result == 0 && run > 0 && skipped == run) return 77;
  return result;
}
