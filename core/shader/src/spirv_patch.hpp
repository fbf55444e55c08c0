// SPDX-License-Identifier: Apache-2.0
// core/shader/src/spirv_patch.hpp — small word-level helpers of the shader layer: a module
// with its specialization constants' defaults replaced (so SPIRV-Cross reflects the
// specialised interface) and SPIR-V capability names.
// Thread-safety: pure functions, safe from any number of threads.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "vgpu/shader/shader_tools.hpp"

namespace vgpu::shader {

/// Returns words with the default of every constant decorated SpecId n that spec sets replaced
/// by spec's value (booleans: OpSpecConstantTrue/False swapped). Only for reflection: pipelines
/// get the original module and a VkSpecializationInfo.
std::vector<std::uint32_t> with_spec_defaults(std::span<const std::uint32_t> words, std::span<const SpecEntry> spec);

/// Returns the SPIR-V name of capability ("Float16", "VulkanMemoryModel"), or "Capability<n>".
std::string capability_name(std::uint32_t capability);

}  // namespace vgpu::shader
