// SPDX-License-Identifier: Apache-2.0
// core/runtime/device/calibration_hold.hpp — the one seam libvgpu leaves for its tests: the
// point right before a background calibration's first call on a device, where a test-only
// library (tests/hooks, never part of libvgpu) may hold it until the process stops its
// background work, so a test can end a process with that driver call in flight. libvgpu
// carries no hook code: only a weak reference to vgpu_testing_calibration_hold, which is null
// unless a test program defines it (linked in, or a preloaded/RTLD_GLOBAL library).
#pragma once

#include <string>

// Called twice by a held calibration: phase 0 right before its first call on device_id (return
// non-zero to hold it there), phase 1 when the hold ends. Defined only by tests/hooks.
#if defined(__GNUC__)
extern "C" __attribute__((weak, visibility("default"))) int vgpu_testing_calibration_hold(const char* device_id,
                                                                                          int phase);
#endif

namespace vgpu::detail {

/// Called by a calibration right before its first call on device_id: on a background thread,
/// when a test program asks to hold there (vgpu_testing_calibration_hold), waits until the
/// thread's stop begins (at most 60 s) and returns, so the call then runs with the stop under
/// way. Elsewhere, and always in a program without the test library, returns at once.
/// Thread-safety: any thread.
void calibration_hold_point(const std::string& device_id);

}  // namespace vgpu::detail
