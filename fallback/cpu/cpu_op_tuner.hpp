// SPDX-License-Identifier: Apache-2.0
// fallback/cpu/cpu_op_tuner.hpp — how the CPU backend runs the built-in ops.
#pragma once

#include <memory>
#include <string_view>

#include "vgpu/backend/op_tuning.hpp"

namespace vgpu::cpu {

/// The DeviceInfo::features entry of a CPU device whose kernel set has the AMX bfloat16 matmul
/// and whose process may use AMX tiles: bfloat16 matmuls then run on it (kernels_amx.cpp).
inline constexpr std::string_view kAmxMatmulFeature = "amx_bf16_matmul";

/// Returns the CPU backend's OpTuner: one-invocation workgroups, each a tile or chunk of
/// fallback/cpu/kernels/cpu_tiles.hpp (one shared, immutable instance).
std::shared_ptr<const OpTuner> cpu_op_tuner();

}  // namespace vgpu::cpu
