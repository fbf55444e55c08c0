// SPDX-License-Identifier: Apache-2.0
// vgpu/backend/dispatch_time_log.hpp — where a device's dispatch times go (Device::dispatch_times).
// Backend-author interface: core owns one per Device (it lasts across recoveries, as the
// counters do) and attaches it to each backend device; backends read enabled() when they record
// or submit work and report what their timers measured through DeviceImpl::report_dispatch_time.
#pragma once

#include <atomic>
#include <cstddef>
#include <deque>
#include <mutex>
#include <vector>

#include "vgpu/dispatch_time.hpp"

namespace vgpu {

/// The switch of a device's dispatch timing and the newest times measured. Bounded: the oldest
/// times go once kCapacity are kept. Thread-safety: every member is safe from any thread.
class DispatchTimeLog {
 public:
  /// The most times kept; older ones are dropped (counters keep the totals).
  static constexpr std::size_t kCapacity = kDispatchTimesKept;

  /// Turns timing on or off for work recorded or submitted from now on.
  void set_enabled(bool on) noexcept { enabled_.store(on, std::memory_order_relaxed); }
  /// Returns true while work recorded or submitted now should be timed.
  bool enabled() const noexcept { return enabled_.load(std::memory_order_relaxed); }
  /// Keeps one measured time (dropped when no memory is left: timing never fails a call).
  void add(DispatchTime time) noexcept;
  /// Returns the kept times, oldest first.
  std::vector<DispatchTime> recent() const;
  /// Drops every kept time.
  void clear() noexcept;

 private:
  std::atomic<bool> enabled_{false};
  mutable std::mutex mutex_;  // guards times_ (a leaf: nothing is called under it)
  std::deque<DispatchTime> times_;
};

}  // namespace vgpu
