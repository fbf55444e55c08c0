// SPDX-License-Identifier: Apache-2.0
// backends/cuda/cuda_op_tuner.hpp — how the CUDA backend runs the built-in ops.
#pragma once

#include <memory>

#include "vgpu/backend/op_tuning.hpp"

namespace vgpu::cuda {

/// Returns the CUDA backend's OpTuner: matmul's tiling follows the shape and the SM count, every
/// other op runs as its GLSL original does (one shared, immutable instance).
std::shared_ptr<const OpTuner> cuda_op_tuner();

}  // namespace vgpu::cuda
