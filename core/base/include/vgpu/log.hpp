// SPDX-License-Identifier: Apache-2.0
// vgpu/log.hpp — the one place vgpu reports diagnostics: stderr, filtered by VGPU_LOG, unless
// the process routes its log lines to a sink of its own (set_log_sink, RuntimeOptions::log_sink).
#pragma once

#include "vgpu/export.hpp"

#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>

namespace vgpu {

/// Severity of a log line; VGPU_LOG=error|warn|info|debug sets the threshold (default warn).
enum class LogLevel { error = 0, warn = 1, info = 2, debug = 3 };

/// Receives one log line: its level and its text (without the "vgpu: <level>: " prefix that
/// stderr lines get).
using LogSink = std::function<void(LogLevel level, std::string_view message)>;

/// Reports message: to the sink set_log_sink installed, else as "vgpu: <level>: <message>" on
/// stderr; only when level passes the threshold (VGPU_LOG unless the route sets one).
/// Thread-safe.
VGPU_API void log(LogLevel level, std::string_view message);

/// Routes every log line of this process (logging is process-wide: cache, backends and
/// selection log without knowing any runtime) until restore_log_sink(token): lines passing
/// threshold (nullopt: VGPU_LOG's) go to sink, or to stderr when sink is empty. Replaces the
/// current route and returns its token. The sink gets one line at a time (never two at once),
/// on the thread that logs; it must return promptly and not wait for other threads that use
/// vgpu. A line the sink itself logs goes to stderr; an exception it throws is swallowed (that
/// line then goes to stderr); it must not call set_log_sink or restore_log_sink. A Runtime made
/// with RuntimeOptions::log_sink or log_level calls this for you. Thread-safe.
VGPU_API std::uint64_t set_log_sink(LogSink sink, std::optional<LogLevel> threshold = std::nullopt);

/// Puts back stderr at VGPU_LOG's threshold if token's route is still the current one (a later
/// set_log_sink replaced it otherwise, and then nothing changes). Once it returns, that route's
/// sink is not running and is never called again. Thread-safe.
VGPU_API void restore_log_sink(std::uint64_t token) noexcept;

}  // namespace vgpu
