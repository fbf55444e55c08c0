// SPDX-License-Identifier: Apache-2.0
// vgpu/cache/precompiled.hpp — L3: binaries compiled at build time for every built-in kernel
// variant and embedded in the library:
//  - SPIR-V that glslc compiled from the built-in GLSL (cmake/VgpuGlsl.cmake); a hit skips the
//    GLSL front end entirely. A build without Vulkan has an empty table.
//  - fatbins that nvcc compiled from the built-in CUDA C (cmake/VgpuCuda.cmake): SASS for the
//    listed SM architectures and PTX for the newest; a hit needs no NVRTC. A build without
//    CUDA or without nvcc has an empty table.
// Thread-safety: read-only data, built on first use; safe from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "vgpu/kernel_source.hpp"

namespace vgpu::cache {

/// Returns the build-time SPIR-V (Vulkan 1.1, compute, entry "main") for glsl_body compiled
/// with defines, or nullptr when no precompiled variant has exactly this body text and exactly
/// these defines. The SPIR-V is of kernels::assemble_glsl(glsl_body, defines, <any size>,
/// GlslTarget::vulkan, 0): its workgroup size is specialisation constants 0..2.
/// The pointer stays valid for the life of the process.
const std::vector<std::uint32_t>* find_precompiled_spirv(std::string_view glsl_body,
                                                         const std::map<std::string, std::string>& defines);

/// Returns how many precompiled variants the library holds (0 in a build without Vulkan).
std::size_t precompiled_spirv_count();

/// Returns the build-time fatbin of the built-in CUDA kernel whose exact source text and entry
/// these are, compiled with exactly options' block size and defines (the -D options NVRTC
/// would get); empty when there is none. The bytes live for the life of the process.
std::span<const std::uint8_t> find_precompiled_cuda(std::string_view cuda_source, std::string_view entry,
                                                    const CompileOptions& options);

/// Returns how many precompiled CUDA variants the library holds (0 without CUDA or nvcc).
std::size_t precompiled_cuda_count();

/// Returns the SM architectures the CUDA fatbins hold SASS for, e.g. "75, 80, 86, 89, 90"
/// (the last also as PTX); empty when there are none.
std::string_view precompiled_cuda_archs();

}  // namespace vgpu::cache
