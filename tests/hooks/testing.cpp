// SPDX-License-Identifier: Apache-2.0
// tests/hooks/testing.cpp — simulated device loss for vgpu's tests (vgpu/testing.hpp), through
// the runtime's own DeviceCore (the tests link the layers' objects, so they reach it).
#include "vgpu/testing.hpp"

#include "device_core.hpp"

namespace vgpu::testing {

void force_device_lost(const Device& device, LossPoint when) {
  detail::DeviceCore& core = detail::DeviceAccess::core(device);
  if (when == LossPoint::now)
    core.force_lost("simulated by testing::force_device_lost");
  else
    core.inject_loss();
}

}  // namespace vgpu::testing
