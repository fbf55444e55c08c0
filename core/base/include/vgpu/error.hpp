// SPDX-License-Identifier: Apache-2.0
// vgpu/error.hpp — the one error type vgpu reports every failure with.
#pragma once

#include "vgpu/export.hpp"

#include <stdexcept>
#include <string>
#include <string_view>

namespace vgpu {

/// What kind of failure an Error reports; callers branch on this, never on message text.
enum class ErrorCategory {
  invalid_argument,  ///< the caller passed something wrong (shape, size, slot, null data)
  not_supported,     ///< the device or backend cannot do what was asked
  compile_error,     ///< kernel source failed to compile; the message carries the compiler log
  out_of_memory,     ///< a host or device allocation failed
  device_lost,       ///< the device stopped working (its next call recreates it), or a buffer lost its contents with it
  io,                ///< a file or directory operation failed
  unavailable,       ///< a backend or driver is missing on this machine
  internal,          ///< a vgpu bug; please report it
  timeout,           ///< a blocking call ran past its time limit (VGPU_TIMEOUT_MS, Device::set_timeout or
                     ///< the call's own limit); the device is then still usable or, where work of the
                     ///< call is still running on it, lost (Device::lost(); later calls: device_lost)
};

/// Returns the lower-case name of a category, e.g. "invalid_argument".
VGPU_API std::string_view to_string(ErrorCategory category) noexcept;

/// The single exception type of vgpu. Its what() reads "<problem> Fix: <hint>".
/// Thread-safety: immutable after construction; safe to share between threads.
class VGPU_API Error : public std::runtime_error {
 public:
  /// Builds an error from a problem statement and an actionable fix hint.
  Error(ErrorCategory category, std::string_view problem, std::string_view fix);

  /// Returns the category used to branch on the failure.
  ErrorCategory category() const noexcept { return category_; }
  /// Returns the problem statement without the fix hint.
  const std::string& problem() const noexcept { return problem_; }
  /// Returns the fix hint alone.
  const std::string& fix() const noexcept { return fix_; }

 private:
  ErrorCategory category_;
  std::string problem_;
  std::string fix_;
};

/// Throws Error(category, problem, fix); the one way vgpu code reports failure.
[[noreturn]] VGPU_API void fail(ErrorCategory category, std::string_view problem, std::string_view fix);

}  // namespace vgpu
