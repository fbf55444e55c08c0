// SPDX-License-Identifier: Apache-2.0
// tests/support/validation_watch.cpp — the log sink and Catch listener of validation_watch.hpp.
#include "support/validation_watch.hpp"

// Catch2 2 declares its listener base class only with the external interfaces.
#define CATCH_CONFIG_EXTERNAL_INTERFACES
#include "support/catch.hpp"

#include <cstdio>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "vgpu/log.hpp"

namespace vgpu_test {
namespace {

constexpr std::string_view kPrefix = "Vulkan validation:";

struct Seen {
  std::mutex mutex;
  std::vector<std::string> lines;
  std::string test_case;  // the case running when a line came
};

Seen& seen() {
  static Seen s;
  return s;
}

const char* level_name(vgpu::LogLevel level) {
  switch (level) {
    case vgpu::LogLevel::error:
      return "error";
    case vgpu::LogLevel::warn:
      return "warning";  // as core/base/src/log.cpp writes it
    case vgpu::LogLevel::info:
      return "info";
    default:
      return "debug";
  }
}

void install() {
  vgpu::set_log_sink([](vgpu::LogLevel level, std::string_view message) {
    if (message.starts_with(kPrefix)) {
      std::lock_guard lock(seen().mutex);
      seen().lines.push_back("[" + seen().test_case + "] " + std::string(message));
    }
    // The same line stderr would get without a sink (tests that capture stderr read it).
    std::fprintf(stderr, "vgpu: %s: %.*s\n", level_name(level), static_cast<int>(message.size()), message.data());
  });
}

// Puts the sink back at the start of each test case: a case that routed the log elsewhere
// (RuntimeOptions::log_sink) leaves stderr behind when it ends.
class ValidationListener : public Catch::EventListenerBase {
 public:
  using Base = Catch::EventListenerBase;
  using Base::Base;
  void testCaseStarting(const Catch::TestCaseInfo& info) override {
    {
      std::lock_guard lock(seen().mutex);
      seen().test_case = info.name;
    }
    install();
  }
};

}  // namespace

CATCH_REGISTER_LISTENER(ValidationListener)

void watch_validation() { install(); }

int validation_verdict(int result) {
  std::lock_guard lock(seen().mutex);
  if (seen().lines.empty()) return result;
  std::fprintf(stderr, "FAILED: %zu Vulkan validation message(s) were logged:\n", seen().lines.size());
  for (const std::string& line : seen().lines) std::fprintf(stderr, "  %s\n", line.c_str());
  return result == 0 ? 1 : result;
}

}  // namespace vgpu_test
