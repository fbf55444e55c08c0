// SPDX-License-Identifier: Apache-2.0
// tests/hooks/calibration_hold.cpp — the tests' hold of a background calibration: defines the
// hook libvgpu references weakly (core/runtime/device/calibration_hold.hpp) and the calls that
// arm it. Depends on nothing of vgpu's, so it is also the shared library libvgpu_testing_hooks.so
// that Python tests load (ctypes, RTLD_GLOBAL) before they import vgpu: libvgpu.so then binds
// its weak reference to this definition.
#include <atomic>
#include <mutex>
#include <string>

#include "vgpu/testing.hpp"

namespace {

// The hold asked for (hold_background_calibration), and whether a calibration waits there.
struct Hold {
  std::mutex mutex;  // a leaf
  std::string device;
  std::atomic<bool> held{false};
};
Hold& hold() {
  static Hold* h = new Hold();  // never destroyed: a held thread may wake while the process exits
  return *h;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int vgpu_testing_calibration_hold(const char* device_id, int phase) {
  Hold& h = hold();
  if (phase != 0) {
    h.held.store(false);
    return 0;
  }
  {
    std::lock_guard lock(h.mutex);
    if (h.device.empty() || h.device != device_id) return 0;
    h.device.clear();  // one hold per request
  }
  h.held.store(true);
  return 1;
}

/// For Python's ctypes: vgpu::testing::hold_background_calibration(device_id).
extern "C" __attribute__((visibility("default"))) void vgpu_testing_hold_background_calibration(const char* device_id) {
  vgpu::testing::hold_background_calibration(device_id ? device_id : "");
}

/// For Python's ctypes: vgpu::testing::background_calibration_held() (1 or 0).
extern "C" __attribute__((visibility("default"))) int vgpu_testing_background_calibration_held() {
  return vgpu::testing::background_calibration_held() ? 1 : 0;
}

namespace vgpu::testing {

void hold_background_calibration(const std::string& device_id) {
  Hold& h = hold();
  std::lock_guard lock(h.mutex);
  h.device = device_id;
}

bool background_calibration_held() noexcept { return hold().held.load(); }

}  // namespace vgpu::testing
