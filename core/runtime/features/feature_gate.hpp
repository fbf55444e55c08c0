// SPDX-License-Identifier: Apache-2.0
// core/runtime/features/feature_gate.hpp — the compile path's use of the capability truth tests
// (vgpu/feature_check.hpp): a kernel declaring the SPIR-V capability of a feature that failed
// its probe on the device is refused. Thread-safety: as check_features.
#pragma once

#include <string>
#include <string_view>

#include "vgpu/specialization.hpp"

namespace vgpu::detail {

class DeviceCore;

/// Throws not_supported (after one warning per device and feature) when r declares the SPIR-V
/// capability of a feature core's device advertises but whose truth test did not pass; runs
/// the probe first when no verdict is known (memoised, then read from L2). kernel names the
/// kernel in the message.
void check_kernel_features(DeviceCore& core, const KernelReflection& r, const std::string& kernel);

/// Returns whether a built-in variant may use feature (a DeviceInfo::features name) on core's
/// device: advertised, and its truth test passed (run now when no verdict is known) or vgpu
/// has no probe for it.
bool feature_usable(DeviceCore& core, std::string_view feature);

}  // namespace vgpu::detail
