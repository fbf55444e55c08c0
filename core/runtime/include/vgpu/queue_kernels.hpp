// SPDX-License-Identifier: Apache-2.0
// vgpu/queue_kernels.hpp — the queue ABI's binding declarations and the design's example queue
// kernel (add 1 to each u32 word of a payload) in every dialect: GLSL (vgpu's body form), CUDA
// and a CPU callable, and as a complete GLSL shader. docs/queue.md walks through them.
#pragma once

#include "vgpu/export.hpp"

#include <string>
#include <vector>

#include "vgpu/kernel_source.hpp"

namespace vgpu {

/// Returns the queue ABI's two binding declarations: slot 0 read `in`, slot 1 read_write `out`.
VGPU_API std::vector<BindingDecl> queue_bindings();

/// Returns the add-one queue kernel's GLSL body (for KernelSource::add_glsl).
VGPU_API const std::string& queue_add_one_glsl();
/// Returns the add-one queue kernel as a complete GLSL shader (for KernelSource::add_glsl_shader;
/// local size 64, its bindings and push constants reflected).
VGPU_API const std::string& queue_add_one_glsl_shader();
/// Returns the add-one queue kernel's CUDA C source; its entry point is "queue_add_one".
VGPU_API const std::string& queue_add_one_cuda();
/// The add-one queue kernel as a CPU callable: one workgroup of invocations per call.
VGPU_API void queue_add_one_cpu(const CpuWorkgroup& wg);

/// Returns the add-one queue kernel with its GLSL body, CUDA and CPU forms and the ABI's
/// declarations: each item's output is its payload's whole u32 words, each plus 1 (so a
/// payload of 4n + r bytes gives 4n bytes).
VGPU_API KernelSource queue_add_one_kernel();
/// Returns the add-one queue kernel as a complete GLSL shader only (Vulkan and OpenGL), its
/// bindings and params left to reflection.
VGPU_API KernelSource queue_add_one_shader_kernel();

}  // namespace vgpu
