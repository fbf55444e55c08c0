// SPDX-License-Identifier: Apache-2.0
// core/kernels/gpu_tuning.hpp — how the GLSL built-ins (core/kernels/glsl) and their CUDA
// ports (core/kernels/cuda) are meant to be run: the facts of their code, for the backends'
// OpTuners (Vulkan and OpenGL use it as is, CUDA for every op but matmul).
#pragma once

#include <memory>

#include "vgpu/backend/op_tuning.hpp"

namespace vgpu::kernels {

/// Returns the workgroup size, defines and work per group the GPU built-ins take for shape.op;
/// throws not_supported for an unknown op.
OpTuning builtin_gpu_tuning(const OpShape& shape);

/// Returns the OpTuner that runs every built-in as builtin_gpu_tuning says (one shared instance).
std::shared_ptr<const OpTuner> gpu_builtin_tuner();

}  // namespace vgpu::kernels
