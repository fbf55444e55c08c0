// SPDX-License-Identifier: Apache-2.0
// core/base/src/log.cpp — log lines to stderr (VGPU_LOG threshold) or to the process's sink.
#include "vgpu/log.hpp"

#include <atomic>
#include <cstdio>
#include <mutex>
#include <string>
#include <utility>

#include "vgpu/config.hpp"

namespace vgpu {
namespace {

const char* name(LogLevel level) {
  switch (level) {
    case LogLevel::error:
      return "error";
    case LogLevel::warn:
      return "warning";
    case LogLevel::info:
      return "info";
    case LogLevel::debug:
      return "debug";
  }
  return "?";
}

/// Where lines go: the sink and token of the last set_log_sink (an empty sink: stderr).
struct Route {
  std::mutex mutex;  // held while a line is written or a sink runs: lines stay whole and in order
  std::uint64_t token = 0;
  LogSink sink;
};

Route& route() {
  static Route* r = new Route();  // never destroyed: static destructors and exiting threads log too
  return *r;
}

std::atomic<int> g_threshold{-1};  // the route's threshold; -1: VGPU_LOG's
std::atomic<std::uint64_t> g_tokens{0};
thread_local bool t_in_sink = false;  // this thread runs the sink: its own lines go to stderr

LogLevel threshold() {
  const int t = g_threshold.load(std::memory_order_relaxed);
  return t < 0 ? config().log_level : static_cast<LogLevel>(t);
}

void to_stderr(LogLevel level, std::string_view message) {
  std::fprintf(stderr, "vgpu: %s: %.*s\n", name(level), static_cast<int>(message.size()), message.data());
}

}  // namespace

void log(LogLevel level, std::string_view message) {
  if (static_cast<int>(level) > static_cast<int>(threshold())) return;
  if (t_in_sink) {  // a line the sink caused: the route's mutex is this thread's already
    to_stderr(level, message);
    return;
  }
  Route& r = route();
  std::lock_guard lock(r.mutex);
  if (r.sink) {
    t_in_sink = true;
    try {
      r.sink(level, message);
      t_in_sink = false;
      return;
    } catch (...) {  // a sink that throws loses its line to stderr, never vgpu's state
      t_in_sink = false;
    }
  }
  to_stderr(level, message);
}

std::uint64_t set_log_sink(LogSink sink, std::optional<LogLevel> level) {
  Route& r = route();
  std::lock_guard lock(r.mutex);
  std::swap(r.sink, sink);  // the replaced sink is destroyed after the lock is released
  r.token = g_tokens.fetch_add(1, std::memory_order_relaxed) + 1;
  g_threshold.store(level ? static_cast<int>(*level) : -1, std::memory_order_relaxed);
  return r.token;
}

void restore_log_sink(std::uint64_t token) noexcept {
  Route& r = route();
  LogSink old;  // destroyed after the lock is released: its captures may log
  {
    std::lock_guard lock(r.mutex);
    if (token == 0 || r.token != token) return;
    old = std::move(r.sink);
    r.sink = nullptr;
    r.token = 0;
    g_threshold.store(-1, std::memory_order_relaxed);
  }
}

}  // namespace vgpu
