// vgpu/log.hpp — the one place vgpu prints diagnostics (stderr, filtered by VGPU_LOG).
#pragma once

#include <string_view>

namespace vgpu {

/// Severity of a log line; VGPU_LOG=error|warn|info|debug sets the threshold (default warn).
enum class LogLevel { error = 0, warn = 1, info = 2, debug = 3 };

/// Prints "vgpu: <level>: <message>" to stderr when level passes VGPU_LOG. Thread-safe.
void log(LogLevel level, std::string_view message);

}  // namespace vgpu
