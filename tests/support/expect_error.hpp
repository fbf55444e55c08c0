// SPDX-License-Identifier: Apache-2.0
// tests/support/expect_error.hpp — assert that code fails with a proper vgpu::Error: the right
// category, a problem statement, and an actionable "Fix: <hint>" that ends the message.
#pragma once

#include "support/catch.hpp"

#include <optional>
#include <string>

#include "vgpu/error.hpp"

namespace vgpu_test {

/// Runs f and returns the vgpu::Error it threw, or nothing. Any other exception type escapes
/// (and fails the test): a bare std:: exception reaching a user is a bug.
template <class F>
std::optional<vgpu::Error> catch_error(F&& f) {
  try {
    f();
  } catch (const vgpu::Error& e) {
    return e;
  }
  return std::nullopt;
}

/// Checks e's category, that its message contains fragment, and that it reads
/// "<problem> Fix: <hint>" with the hint last and non-trivial.
inline void check_error(const vgpu::Error& e, vgpu::ErrorCategory category, const std::string& fragment) {
  const std::string what = e.what();
  INFO("what(): " << what);
  CHECK(std::string(vgpu::to_string(e.category())) == std::string(vgpu::to_string(category)));
  CHECK(!e.problem().empty());
  CHECK(e.fix().size() >= 10);
  const auto pos = what.rfind("Fix: ");
  REQUIRE(pos != std::string::npos);
  CHECK(what.substr(pos + 5) == e.fix());  // the hint is the end of the message
  CHECK(what.substr(0, pos) == e.problem() + " ");
  if (!fragment.empty()) CHECK_THAT(what, Catch::Matchers::ContainsSubstring(fragment));
}

}  // namespace vgpu_test

/// Requires that the statements throw vgpu::Error of ErrorCategory::category whose what()
/// contains fragment (may be "") and ends with a "Fix: " hint.
#define REQUIRE_VGPU_ERROR(category, fragment, ...)                                  \
  do {                                                                               \
    auto vgpu_err_ = ::vgpu_test::catch_error([&] { __VA_ARGS__; });                 \
    INFO("expected vgpu::Error(" #category ") from: " #__VA_ARGS__);                 \
    REQUIRE(vgpu_err_.has_value());                                                  \
    ::vgpu_test::check_error(*vgpu_err_, ::vgpu::ErrorCategory::category, fragment); \
  } while (0)
