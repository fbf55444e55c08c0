// SPDX-License-Identifier: Apache-2.0
// vgpu/testing.hpp — hooks for vgpu's own tests: the test-only library vgpu_testing
// (tests/hooks), linked by test programs beside the layers' objects (vgpu_internal). Never part
// of libvgpu, never installed: the shipped library carries no test hooks, only the hold point's
// weak reference (core/runtime/device/calibration_hold.hpp).
#pragma once

#include <string>

#include "vgpu/device.hpp"

namespace vgpu::testing {

/// When a simulated device loss strikes.
enum class LossPoint {
  now,        ///< the device is marked lost at once, as after a driver report between two calls
  next_wait,  ///< the backend's next wait for submitted work reports the loss as its API would
};

/// FOR TESTS ONLY. Simulates losing device, on every backend, so that code built on vgpu can
/// test its handling of device loss (the design's force_device_lost()). LossPoint::now marks the
/// device lost (Device::lost() turns true; counters().device_losses grows); LossPoint::next_wait
/// arms the backend so that its next wait for submitted work reports the loss through the
/// backend's own detection path (its simulated-loss hook), i.e. a loss during a run. Either way
/// the next call on the device recreates it (counters().recoveries grows): see Device for what
/// recovery restores. Throws invalid_argument for an empty handle. Thread-safety: any thread.
void force_device_lost(const Device& device, LossPoint when = LossPoint::now);

/// FOR TESTS ONLY. Holds the next background calibration (Runtime::choose, VGPU_BACKGROUND)
/// that is about to make its first call on the device with this id ("vulkan:0"): it waits there
/// until its runtime stops its background work — the runtime destroyed, or the process exiting —
/// at most 60 s, and then makes that call all the same, as a call already inside the driver when
/// the stop came would. So a test can end a process with driver work in flight at exactly that
/// point (background_calibration_held() says when). One hold at a time, used once; an empty id
/// clears it. Foreground calibrations are never held. Thread-safety: any thread.
void hold_background_calibration(const std::string& device_id);

/// FOR TESTS ONLY. Returns whether a background calibration waits at the hold that
/// hold_background_calibration() asked for. Thread-safety: any thread.
bool background_calibration_held() noexcept;

}  // namespace vgpu::testing
