// SPDX-License-Identifier: Apache-2.0
// tests/support/capture_stderr.hpp — what vgpu writes to stderr (fd 2) while a test runs code.
// Not thread-safe: it redirects the process's fd 2, so use it while no other thread logs.
#pragma once

#include <unistd.h>

#include "support/catch.hpp"
#include <cstdio>
#include <string>

namespace vgpu_test {

/// Collects what is written to stderr (fd 2) during its lifetime.
class CaptureStderr {
 public:
  CaptureStderr() {
    std::fflush(stderr);
    saved_ = ::dup(2);
    std::FILE* f = std::tmpfile();
    REQUIRE(f != nullptr);
    file_ = f;
    ::dup2(::fileno(f), 2);
  }
  ~CaptureStderr() {
    restore();
    if (file_) std::fclose(file_);
  }
  CaptureStderr(const CaptureStderr&) = delete;
  CaptureStderr& operator=(const CaptureStderr&) = delete;

  /// Stops capturing and returns everything captured.
  std::string text() {
    restore();
    std::rewind(file_);
    std::string out;
    char buf[4096];
    for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, file_)) > 0;) out.append(buf, n);
    return out;
  }

 private:
  void restore() {
    if (saved_ < 0) return;
    std::fflush(stderr);
    ::dup2(saved_, 2);
    ::close(saved_);
    saved_ = -1;
  }
  int saved_ = -1;
  std::FILE* file_ = nullptr;
};

/// Runs f and returns what it wrote to stderr.
template <class F>
std::string stderr_of(F&& f) {
  CaptureStderr capture;
  f();
  return capture.text();
}

}  // namespace vgpu_test
