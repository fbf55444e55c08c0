// SPDX-License-Identifier: Apache-2.0
// tests/support/catch.hpp — the one Catch2 header every test source includes, for Catch2 2.13
// (one header, catch2/catch.hpp) and Catch2 3.x (a compiled library, catch2/catch_all.hpp).
// Tests are written against Catch2 3's names; for Catch2 2 this header supplies the few that
// are new in 3, so no test needs a version check of its own:
//   Catch::Matchers::ContainsSubstring  (Catch2 2: Catch::Matchers::Contains on strings)
//   Catch::EventListenerBase            (Catch2 2: Catch::TestEventListenerBase)
//   vgpu_test::invoker_ptr              (AutoReg takes Detail::unique_ptr in 3, a raw pointer in 2)
// VGPU_CATCH2_MAJOR is 2 or 3; tests/CMakeLists.txt passes the version it found as
// VGPU_CATCH2_FOUND_MAJOR, and a mismatch (headers of one version on the include path ahead of
// the package CMake chose) is a compile error rather than a link error in Catch's internals.
#pragma once

#if __has_include(<catch2/catch_all.hpp>)
#include <catch2/catch_all.hpp>
#define VGPU_CATCH2_MAJOR 3
#else
#include <catch2/catch.hpp>
#define VGPU_CATCH2_MAJOR 2
#endif

#if defined(VGPU_CATCH2_FOUND_MAJOR) && VGPU_CATCH2_FOUND_MAJOR != VGPU_CATCH2_MAJOR
#error \
    "tests/support/catch.hpp: the Catch2 headers found first are not those of the Catch2 package CMake found. Fix: point CMAKE_PREFIX_PATH (or Catch2_DIR) at the Catch2 whose headers are on the include path, or remove the other one."
#endif

#include <string>

#if VGPU_CATCH2_MAJOR == 2
namespace Catch {
namespace Matchers {
/// Catch2 3's name for the substring matcher (Catch2 2 calls it Contains).
inline StdString::ContainsMatcher ContainsSubstring(const std::string& str,
                                                    CaseSensitive::Choice cs = CaseSensitive::Yes) {
  return Contains(str, cs);
}
}  // namespace Matchers
#ifdef CATCH_CONFIG_EXTERNAL_INTERFACES  // declares the listener bases (validation_watch.cpp)
/// Catch2 3's name for the listener base class.
using EventListenerBase = TestEventListenerBase;
#endif
}  // namespace Catch
#endif

namespace vgpu_test {

/// Wraps a newly allocated test invoker in what Catch::AutoReg takes in this Catch2 version.
inline auto invoker_ptr(Catch::ITestInvoker* invoker) {
#if VGPU_CATCH2_MAJOR == 3
  return Catch::Detail::unique_ptr<Catch::ITestInvoker>(invoker);
#else
  return invoker;
#endif
}

}  // namespace vgpu_test
