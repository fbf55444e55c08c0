// SPDX-License-Identifier: Apache-2.0
// python/src/log_bridge.cpp — vgpu's log lines to Python's logging (logger "vgpu"), so they show
// where Python programs and notebooks look (Jupyter never shows C-level stderr).
//
// vgpu logs from any thread, some of them vgpu's own workers that a Python call may be waiting
// for with the GIL held, so the sink must never wait for the GIL (vgpu/log.hpp: a sink must not
// wait for threads that use vgpu). It queues each line and asks the interpreter to deliver the
// queue from its main thread at the next safe point (Py_AddPendingCall, callable without the
// GIL); a thread that already holds the GIL delivers at once, in order. At interpreter exit an
// atexit hook puts stderr back (later lines go there) and delivers what is still queued.
#include <pybind11/pybind11.h>

#include <cctype>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "bindings.hpp"
#include "vgpu/log.hpp"

namespace py = pybind11;

namespace vgpu::python {
namespace {

/// The queue of lines not yet handed to Python, and the route's state. Thread-safe (one mutex).
struct LogQueue {
  std::mutex m;
  std::deque<std::pair<LogLevel, std::string>> lines;
  bool delivery_scheduled = false;
  std::uint64_t token = 0;  ///< set_log_sink's, for restore_log_sink
};

LogQueue& queue() {
  static LogQueue& q = *new LogQueue();  // leaked: vgpu's threads may log during interpreter exit
  return q;
}

/// Python logging's level number for a vgpu level.
int python_level(LogLevel level) {
  switch (level) {
    case LogLevel::error:
      return 40;  // logging.ERROR
    case LogLevel::warn:
      return 30;  // logging.WARNING
    case LogLevel::info:
      return 20;  // logging.INFO
    case LogLevel::debug:
      break;
  }
  return 10;  // logging.DEBUG
}

/// Hands every queued line to logging.getLogger("vgpu"); needs the GIL. A line logging cannot
/// take (an exception in a handler) is written to stderr instead, never lost silently.
void deliver() {
  std::deque<std::pair<LogLevel, std::string>> lines;
  {
    std::lock_guard lock(queue().m);
    lines.swap(queue().lines);
    queue().delivery_scheduled = false;
  }
  if (lines.empty()) return;
  try {
    py::object logger = py::module_::import("logging").attr("getLogger")("vgpu");
    for (const auto& [level, text] : lines) logger.attr("log")(python_level(level), text);
  } catch (py::error_already_set& e) {
    e.discard_as_unraisable("vgpu's log bridge to Python logging");
  }
}

/// Py_AddPendingCall's callback: runs in the main thread with the GIL.
int deliver_pending(void*) {
  deliver();
  return 0;
}

/// The sink vgpu calls, on whatever thread logs: queue, then deliver now or schedule it.
void sink(LogLevel level, std::string_view message) {
  bool schedule = false;
  {
    std::lock_guard lock(queue().m);
    queue().lines.emplace_back(level, std::string(message));
    if (!queue().delivery_scheduled) schedule = queue().delivery_scheduled = true;
  }
  if (PyGILState_Check()) {
    deliver();
    return;
  }
  // Fails only when the interpreter's pending-call slots are full: the lines stay queued and
  // the next line schedules again.
  if (schedule && Py_AddPendingCall(&deliver_pending, nullptr) != 0) {
    std::lock_guard lock(queue().m);
    queue().delivery_scheduled = false;
  }
}

/// Routes vgpu's log to Python at threshold (nullopt: VGPU_LOG's, default warn).
void route(std::optional<LogLevel> threshold) {
  const std::uint64_t token = set_log_sink(&sink, threshold);
  std::lock_guard lock(queue().m);
  queue().token = token;
}

/// Sends vgpu's lines to stderr again (the route route() installed, if it is still the current one).
void unroute() {
  std::uint64_t token = 0;
  {
    std::lock_guard lock(queue().m);
    token = queue().token;
  }
  restore_log_sink(token);  // not under the lock: it waits for a running sink, which takes it
}

/// Parses "error", "warn"/"warning", "info", "debug" (any case) or a logging level number.
LogLevel parse_level(const py::object& level) {
  if (py::isinstance<py::int_>(level)) {
    const int n = level.cast<int>();
    return n >= 40 ? LogLevel::error : n >= 30 ? LogLevel::warn : n >= 20 ? LogLevel::info : LogLevel::debug;
  }
  std::string text = py::str(level);
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (text == "error") return LogLevel::error;
  if (text == "warn" || text == "warning") return LogLevel::warn;
  if (text == "info") return LogLevel::info;
  if (text == "debug") return LogLevel::debug;
  throw py::value_error("set_log_level: '" + std::string(py::str(level)) +
                        "' is not a level. Fix: pass 'error', 'warn', 'info' or 'debug' (or logging.ERROR ... "
                        "logging.DEBUG).");
}

}  // namespace

void bind_log(py::module_& m) {
  route(std::nullopt);
  // At interpreter exit: back to stderr first (restore_log_sink returns once the sink is not
  // running and never calls it again, so no vgpu thread schedules a pending call into an
  // interpreter being finalized), then hand over what is queued.
  py::module_::import("atexit").attr("register")(py::cpp_function([] {
    unroute();
    deliver();
  }));
  m.def(
      "set_log_level", [](const py::object& level) { route(parse_level(level)); }, py::arg("level"),
      "Sets which of vgpu's log lines reach Python's logging (logger 'vgpu'): 'error', 'warn' (the default, "
      "or VGPU_LOG's), 'info' or 'debug', or a logging level number. The logger's own level and handlers "
      "then apply as for any logger.");
  m.def(
      "log_to_stderr", [] { unroute(); },
      "Sends vgpu's log lines to C-level stderr again (at VGPU_LOG's level) instead of Python's logging; "
      "set_log_level routes them back.");
}

}  // namespace vgpu::python
