// core/src/log.cpp — stderr logging with a VGPU_LOG threshold.
#include "vgpu/log.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

namespace vgpu {
namespace {

LogLevel threshold() {
  static const LogLevel level = [] {
    const char* v = std::getenv("VGPU_LOG");
    if (!v) return LogLevel::warn;
    if (!std::strcmp(v, "error") || !std::strcmp(v, "quiet")) return LogLevel::error;
    if (!std::strcmp(v, "info")) return LogLevel::info;
    if (!std::strcmp(v, "debug")) return LogLevel::debug;
    return LogLevel::warn;
  }();
  return level;
}

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
