// SPDX-License-Identifier: Apache-2.0
// vgpu/backend/timing_clock.hpp — the clock vgpu's measurements of a device's work read.
// Backend-author interface: DeviceImpl::timing_clock() returns one; core reads it wherever a
// measured time decides something (calibration's timed runs, probes and separation rounds,
// the variant choice, a queue set's split).
//
// Every real device measures on the steady clock. A backend whose devices simulate their cost
// instead of spending it (the tests' backend: an injected latency per dispatch) returns a clock
// that its calls advance by that cost, so what is measured is exactly the simulated cost, however
// loaded the machine is. Time limits (Deadline) never use it: they bound real waits.
#pragma once

#include <chrono>

namespace vgpu {

/// A clock measurements read. Thread-safety: now() is safe from any thread.
class TimingClock {
 public:
  using time_point = std::chrono::steady_clock::time_point;
  virtual ~TimingClock() = default;
  /// Returns the current time on this clock.
  virtual time_point now() const noexcept = 0;
  /// Returns the steady clock (std::chrono::steady_clock), the clock of every real device.
  static const TimingClock& steady() noexcept;
};

}  // namespace vgpu
