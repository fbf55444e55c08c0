// core/src/log.cpp — stderr logging with a VGPU_LOG threshold.
#include "vgpu/log.hpp"

#include <cstdio>
#include <mutex>
#include <string>

#include "vgpu/config.hpp"

namespace vgpu {
namespace {

LogLevel threshold() { return config().log_level; }

const char* name(LogLevel level) {
  switch (level) {
    case LogLevel::error: return "error";
    case LogLevel::warn: return "warning";
    case LogLevel::info: return "info";
    case LogLevel::debug: return "debug";
  }
  return "?";
}

}  // namespace

void log(LogLevel level, std::string_view message) {
  if (static_cast<int>(level) > static_cast<int>(threshold())) return;
  static std::mutex mutex;  // keeps lines from different threads whole
  std::lock_guard lock(mutex);
  std::fprintf(stderr, "vgpu: %s: %.*s\n", name(level), static_cast<int>(message.size()), message.data());
}

}  // namespace vgpu
