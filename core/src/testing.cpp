// SPDX-License-Identifier: Apache-2.0
// core/src/testing.cpp — the simulated device loss of vgpu/testing.hpp.
#include "vgpu/testing.hpp"

#include "device_core.hpp"
#include "variant_choice.hpp"
#include "vgpu/kernels/gpu_tuning.hpp"

namespace vgpu::testing {

void force_device_lost(const Device& device, LossPoint when) {
  detail::DeviceCore& core = detail::DeviceAccess::core(device);
  if (when == LossPoint::now)
    core.force_lost("simulated by testing::force_device_lost");
  else
    core.inject_loss();
}

void tune_software_devices(bool on) { kernels::set_software_candidates(on); }

void forget_variant_choices() { detail::forget_variant_choices(); }

}  // namespace vgpu::testing
