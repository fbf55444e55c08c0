// SPDX-License-Identifier: Apache-2.0
// vgpu/cache/payload_check.hpp — what an L2 payload must be before any driver sees it.
// Backend-author interface. DiskStore::load() and list(verify = true) run payload_problem() on
// every payload whose checksum matched (a checksum proves only that the bytes are the ones
// written, not that what was written is sound: a resealed, damaged SPIR-V module once crashed
// lavapipe inside vkCreateComputePipelines); a payload it refuses is dropped and counted as
// rejected "invalid". Backends run the device-specific checks (pipeline_cache_problem with the
// device's identity) themselves. docs/cache-format.md lists every check.
// Thread-safety: every function is pure and safe from any number of threads.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>

#include "vgpu/cache/disk_store.hpp"

namespace vgpu::cache {

/// The SPIR-V environment vgpu compiles user GLSL for (backends/vulkan/glsl_compiler.cpp:
/// shaderc's Vulkan 1.1 target, SPIR-V 1.3), and so validates L2 SPIR-V against.
inline constexpr const char* kSpirvTargetEnv = "vulkan1.1";

/// Returns why payload, the payload of an entry of kind, must not be used, or "" when it may:
/// spirv: SPIRV-Tools' validator (Vulkan 1.1) accepts it and it has a GLCompute entry point
/// "main"; vk_pipeline_cache: a 32-byte version-one header (device-independent part);
/// gl_program_binary: a format word and at least one byte; cuda_binary: an ELF64 CUDA image
/// whose headers and sections lie inside the payload, or NUL-terminated PTX text; selection:
/// nothing here (the selection reader checks its JSON).
std::string payload_problem(EntryKind kind, std::span<const std::uint8_t> payload);

/// Returns why bytes are not a SPIR-V module vgpu may hand to a Vulkan driver, or "".
std::string spirv_problem(std::span<const std::uint8_t> bytes);

/// The device a VkPipelineCache blob must name (VkPhysicalDeviceProperties fields).
struct PipelineCacheIdentity {
  std::uint32_t vendor_id = 0, device_id = 0;
  std::array<std::uint8_t, 16> uuid{};  ///< pipelineCacheUUID
};

/// Returns why blob is not VkPipelineCache data vkCreatePipelineCache may see, or "": at least
/// 32 bytes, headerSize exactly 32 (VkPipelineCacheHeaderVersionOne requires it) and header
/// version 1; with device also its vendorID, deviceID and pipelineCacheUUID.
std::string pipeline_cache_problem(std::span<const std::uint8_t> blob, const PipelineCacheIdentity* device = nullptr);

/// Returns why image is neither a well-formed ELF64 CUDA image (every header, segment and
/// section inside it: cuModuleLoadData takes no length) nor NUL-terminated PTX, or "".
std::string cuda_image_problem(std::span<const std::uint8_t> image);

}  // namespace vgpu::cache
