// SPDX-License-Identifier: Apache-2.0
// backends/vulkan/spirv_interface.hpp — checks a SPIR-V module's interface against the
// pipeline vgpu builds for it, before any driver sees the pair. SPIRV-Tools' validator (run on
// every L2 payload by the store) proves a module well formed, not that it fits the pipeline
// layout: a resealed L2 entry whose Binding or DescriptorSet literal was damaged is valid
// SPIR-V, and lavapipe crashed in vkCreateComputePipelines on such modules. Needs no Vulkan
// headers (the fuzz targets build it without the backend).
// Thread-safety: pure functions, safe from any number of threads.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>

namespace vgpu::vulkan {

/// The pipeline a module is built into: descriptor set 0 holds one storage buffer per slot,
/// push_bytes of push constants, and the workgroup size given as specialisation constants
/// kBodyLocalSizeId.. +2 (32-bit integers each).
/// The first of the three specialisation ids the body prelude takes its local size from.
inline constexpr std::uint32_t kBodyLocalSizeId = 2040;  // == vgpu::kReservedSpecIdFirst

struct PipelineInterface {
  std::span<const std::uint32_t> slots;  ///< the storage-buffer bindings of set 0
  std::uint32_t push_bytes = 0;
  std::array<std::uint32_t, 3> workgroup_size{1, 1, 1};
};

/// Returns why the SPIR-V module words (already valid SPIR-V) does not fit pipeline, or "":
/// its GLCompute entry point "main" exists; every buffer variable is a single storage buffer
/// (StorageBuffer, or Uniform with BufferBlock) in set 0 at one of pipeline.slots, and there is
/// no other descriptor (uniform buffer, image, sampler); push constants, if any, are one block
/// that ends within push_bytes; specialisation constants 2040–2042 are 32-bit integers; and the
/// workgroup size the module runs with, once specialised, is pipeline.workgroup_size (vgpu's
/// prelude takes it from constants 2040–2042; other constants keep their defaults).
std::string spirv_interface_problem(std::span<const std::uint32_t> words, const PipelineInterface& pipeline);

}  // namespace vgpu::vulkan
