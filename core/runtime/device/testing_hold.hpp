// SPDX-License-Identifier: Apache-2.0
// core/runtime/device/testing_hold.hpp — the point where testing::hold_background_calibration holds a
// background calibration (implemented in testing.cpp with the rest of vgpu/testing.hpp).
#pragma once

#include <string>

namespace vgpu::detail {

/// Called by a calibration right before its first call on device_id: on a background thread,
/// when a test asked to hold there, waits until the thread's stop begins (at most 60 s) and
/// returns, so the call then runs with the stop under way. Elsewhere returns at once.
/// Thread-safety: any thread.
void testing_hold(const std::string& device_id);

}  // namespace vgpu::detail
