// SPDX-License-Identifier: Apache-2.0
// core/base/src/error.cpp — the Error type and fail().
#include "vgpu/error.hpp"

#include <string>

namespace vgpu {
namespace {

std::string compose(std::string_view problem, std::string_view fix) {
  std::string text(problem);
  text += " Fix: ";
  text += fix;
  return text;
}

}  // namespace

std::string_view to_string(ErrorCategory category) noexcept {
  switch (category) {
    case ErrorCategory::invalid_argument:
      return "invalid_argument";
    case ErrorCategory::not_supported:
      return "not_supported";
    case ErrorCategory::compile_error:
      return "compile_error";
    case ErrorCategory::out_of_memory:
      return "out_of_memory";
    case ErrorCategory::device_lost:
      return "device_lost";
    case ErrorCategory::io:
      return "io";
    case ErrorCategory::unavailable:
      return "unavailable";
    case ErrorCategory::internal:
      return "internal";
    case ErrorCategory::timeout:
      return "timeout";
  }
  return "unknown";
}

Error::Error(ErrorCategory category, std::string_view problem, std::string_view fix)
    : std::runtime_error(compose(problem, fix)), category_(category), problem_(problem), fix_(fix) {}

void fail(ErrorCategory category, std::string_view problem, std::string_view fix) {
  throw Error(category, problem, fix);
}

}  // namespace vgpu
