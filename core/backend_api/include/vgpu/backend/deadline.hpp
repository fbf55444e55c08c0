// SPDX-License-Identifier: Apache-2.0
// vgpu/backend/deadline.hpp — when a blocking call must give up, and the one way a backend
// reports that it did. Backend-author interface: included by backends/*, fallback/* and core.
//
// Core turns the limit of each call (its own, else the device's Device::set_timeout, else its
// runtime's: RuntimeOptions::timeout or VGPU_TIMEOUT_MS) into one Deadline when the call
// starts, and hands it to every backend member that may wait for submitted work; every wait of
// that call ends at it. A backend whose wait gives up throws fail_timeout(): when nothing of the
// call's work is still running, the device stays usable; when work is still in flight (a GPU
// wait gave up), the backend first calls DeviceImpl::mark_lost(), and core then refuses every
// later call with device_lost.
#pragma once

#include <time.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string_view>

#include "vgpu/device_info.hpp"

namespace vgpu {

/// A point in time (steady clock) after which a blocking call gives up, or none.
/// Its clock is the coarse monotonic clock (a few ns to read, a few ms of resolution), so
/// checking it between CPU workgroups costs next to nothing; limits are honoured to within a
/// few milliseconds. Thread-safety: a plain value.
class Deadline {
 public:
  using Clock = std::chrono::steady_clock;

  /// A deadline that never comes.
  Deadline() = default;
  /// Returns a deadline limit from now; a limit of 0 (or less) means none.
  static Deadline after(std::chrono::milliseconds limit) noexcept;
  /// Returns the current time on the clock deadlines use (coarse, cheap to read).
  static Clock::time_point now() noexcept {
#ifdef CLOCK_MONOTONIC_COARSE
    // The same clock as steady_clock (CLOCK_MONOTONIC), at tick resolution, for a fifth of the
    // cost: CPU dispatches read it between workgroups. Inline: no call through the PLT.
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return Clock::time_point(std::chrono::duration_cast<Clock::duration>(std::chrono::seconds(ts.tv_sec) +
                                                                         std::chrono::nanoseconds(ts.tv_nsec)));
#else
    return Clock::now();
#endif
  }

  /// Returns true when there is a deadline at all.
  bool limited() const noexcept { return when_ != Clock::time_point::max(); }
  /// Returns true once the deadline has passed (never when unlimited).
  bool expired() const noexcept { return limited() && now() >= when_; }
  /// Returns the moment the deadline passes (time_point::max() when unlimited).
  Clock::time_point when() const noexcept { return when_; }
  /// Returns the time left: 0 once passed, nanoseconds::max() when unlimited.
  std::chrono::nanoseconds remaining() const noexcept;
  /// Returns the time left in nanoseconds as Vulkan and EGL/GL waits take it (UINT64_MAX when
  /// unlimited, 0 once passed).
  std::uint64_t remaining_ns() const noexcept;
  /// Returns the limit the deadline was made from (0 when unlimited), for messages.
  std::chrono::milliseconds limit() const noexcept { return limit_; }

 private:
  Clock::time_point when_ = Clock::time_point::max();
  std::chrono::milliseconds limit_{0};
};

/// Pauses between two polls of work begun at start: yields for the first 200 µs (a short
/// kernel or DMA is caught at once), then sleeps a sixteenth of the time waited so far, at most
/// 1 ms (a long one costs no CPU). The one polling policy of the backends' waits.
void pause_while_polling(Deadline::Clock::time_point start);

/// Throws Error(timeout) saying that device ran past deadline's limit while doing what (e.g.
/// "waiting for submitted work"), with the Fix hint (raise the limit, split the work, check the
/// kernel for an endless loop); lost adds that the device is now lost and how to get a fresh one.
[[noreturn]] void fail_timeout(const DeviceInfo& device, const Deadline& deadline, std::string_view what, bool lost);

namespace detail {

/// What the workgroups of one CPU dispatch share so that they stop early: the call's deadline
/// and a flag set once it has passed (CpuWorkgroup::expired reads both).
struct CpuDispatchControl {
  Deadline deadline;
  std::atomic<bool> stop{false};
};

}  // namespace detail

}  // namespace vgpu
