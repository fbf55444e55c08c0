// SPDX-License-Identifier: Apache-2.0
// tests/support/timing.hpp — the clock of the time-limit tests, whose wall-clock checks are
// generous upper bounds only (they prove a call gave up, never how fast anything was).
#pragma once

#include <chrono>

namespace vgpu_test {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

/// Returns the seconds since t0.
inline double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

}  // namespace vgpu_test
