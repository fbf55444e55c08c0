// SPDX-License-Identifier: Apache-2.0
// core/runtime/device/calibration_hold.cpp — the tests' hold point (calibration_hold.hpp): a
// weak reference that is null in every program but vgpu's own tests.
#include "calibration_hold.hpp"

#include <chrono>

#include "background_worker.hpp"

namespace vgpu::detail {

void calibration_hold_point(const std::string& device_id) {
#if defined(__GNUC__)
  if (vgpu_testing_calibration_hold == nullptr || !BackgroundWorker::on_worker_thread()) return;
  if (vgpu_testing_calibration_hold(device_id.c_str(), 0) == 0) return;
  BackgroundWorker::wait_for_stop_here(std::chrono::seconds(60));
  vgpu_testing_calibration_hold(device_id.c_str(), 1);
#else
  (void)device_id;  // no weak symbols: no hold (vgpu's tests that hold run on Linux)
#endif
}

}  // namespace vgpu::detail
