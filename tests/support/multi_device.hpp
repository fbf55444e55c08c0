// SPDX-License-Identifier: Apache-2.0
// tests/support/multi_device.hpp — the multi_device tests' one setup: a runtime over N logical
// CPU devices (VGPU_CPU_DEVICES through RuntimeOptions::cpu_devices) or over test devices with
// knobs, and the set of all its devices.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "support/test_backend.hpp"
#include "vgpu/device_set.hpp"
#include "vgpu/runtime.hpp"

namespace vgpu_test {

/// A runtime over N logical CPU devices only, memory-only cache, calibrating in the foreground.
inline vgpu::RuntimeOptions cpu_options(std::uint32_t devices) {
  vgpu::RuntimeOptions o;
  o.allowed = {vgpu::BackendKind::cpu};
  o.cpu_devices = devices;
  o.cache_enabled = false;
  o.background = false;
  return o;
}

/// A runtime and the set of every device it found; knobs is empty for CPU devices.
struct MultiSetup {
  std::vector<std::shared_ptr<TestDeviceKnobs>> knobs;
  vgpu::Runtime rt;
  vgpu::DeviceSet set;

  /// N logical CPU devices.
  explicit MultiSetup(std::uint32_t cpu_devices) : rt(cpu_options(cpu_devices)), set(vgpu::DeviceSet::all(rt)) {}
  /// Every device of every backend here (the software GPUs lavapipe, llvmpipe beside the CPU),
  /// memory-only cache, foreground calibration: MultiSetup(MultiSetup::every_backend).
  struct EveryBackend {};
  static constexpr EveryBackend every_backend{};
  explicit MultiSetup(EveryBackend) : rt(every_backend_options()), set(vgpu::DeviceSet::all(rt)) {}
  /// One test device per latency (µs per dispatch), fingerprints salted with salt, no disk cache.
  MultiSetup(const std::vector<std::uint64_t>& latencies_us, const std::string& salt)
      : knobs(test_devices(latencies_us, salt)), rt(options(knobs)), set(vgpu::DeviceSet::all(rt)) {}

 private:
  static vgpu::RuntimeOptions every_backend_options() {
    vgpu::RuntimeOptions o;
    o.cache_enabled = false;
    o.background = false;
    return o;
  }
  static vgpu::RuntimeOptions options(const std::vector<std::shared_ptr<TestDeviceKnobs>>& knobs) {
    vgpu::RuntimeOptions o = test_runtime_options(knobs);
    o.cache_enabled = false;
    return o;
  }
};

}  // namespace vgpu_test
