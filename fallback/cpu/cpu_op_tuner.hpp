// SPDX-License-Identifier: Apache-2.0
// fallback/cpu/cpu_op_tuner.hpp — how the CPU backend runs the built-in ops.
#pragma once

#include <memory>

#include "vgpu/backend/op_tuning.hpp"

namespace vgpu::cpu {

/// Returns the CPU backend's OpTuner: one-invocation workgroups, each a tile or chunk of
/// fallback/cpu/kernels/cpu_tiles.hpp (one shared, immutable instance).
std::shared_ptr<const OpTuner> cpu_op_tuner();

}  // namespace vgpu::cpu
