// SPDX-License-Identifier: Apache-2.0
// tests/support/logged_runtime.hpp — a Runtime on its own cache directory that keeps its log
// lines (info and up), for tests that check what vgpu logged.
// Thread-safety: the sink may be called from any thread (the background calibration's too);
// lines are guarded by the mutex.
#pragma once

#include <cstddef>
#include <filesystem>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "vgpu/vgpu.hpp"

namespace vgpu::test {

/// A runtime built from o on dir (L2 on), keeping its log lines.
struct LoggedRuntime {
  std::mutex mutex;
  std::vector<std::string> lines;
  vgpu::Runtime runtime;

  /// Opens the runtime of o with dir as its cache and this object as its log sink.
  LoggedRuntime(vgpu::RuntimeOptions o, const std::filesystem::path& dir)
      : runtime(with_log(std::move(o), dir, this)) {}

  /// o with dir as its cache and a sink that appends to self's lines.
  static vgpu::RuntimeOptions with_log(vgpu::RuntimeOptions o, const std::filesystem::path& dir, LoggedRuntime* self) {
    o.cache_dir = dir;
    o.cache_enabled = true;
    o.log_level = vgpu::LogLevel::info;
    o.log_sink = [self](vgpu::LogLevel, std::string_view line) {
      std::lock_guard lock(self->mutex);
      self->lines.emplace_back(line);
    };
    return o;
  }
  /// Returns how many lines so far contain what.
  std::size_t count(const std::string& what) {
    std::lock_guard lock(mutex);
    std::size_t n = 0;
    for (const auto& l : lines) n += l.find(what) != std::string::npos;
    return n;
  }
  /// Returns every line so far, one per line.
  std::string all() {
    std::lock_guard lock(mutex);
    std::string s;
    for (const auto& l : lines) s += l + "\n";
    return s;
  }
};

}  // namespace vgpu::test
