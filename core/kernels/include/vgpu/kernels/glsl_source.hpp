// SPDX-License-Identifier: Apache-2.0
// core/kernels/glsl_source.hpp — turns a GLSL body (the dialect::glsl entry of a KernelSource) into the full GLSL text
// a compiler sees ("#version 450", defines, the binding-ABI prelude, "#line 1", the body), and gives access to the
// built-in kernels' GLSL, embedded in the library at build time. Used by the OpenGL and Vulkan backends, by the
// build-time L3 step (vgpu-glsl-assemble) and by the L3 lookup, so all of them see byte-identical text. Thread-safety:
// every function here is pure or reads immutable data; safe from any thread.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

namespace vgpu::kernels {

/// Which API the assembled text is for: Vulkan (params in push constants, local size from
/// specialisation constants 0..2) or OpenGL (params in an std430 SSBO, local size by define).
enum class GlslTarget { vulkan, opengl };

/// Returns the complete GLSL text for body: "#version 450", one "#define NAME VALUE" per
/// define, for OpenGL also VGPU_LOCAL_SIZE_X/Y/Z and VGPU_PARAMS_BINDING, the prelude, then
/// "#line 1" and body, so compiler logs number lines from the body's first line.
/// workgroup_size and params_binding shape only the OpenGL text (Vulkan specialises them).
/// Throws Error(invalid_argument) for a define name that is not an identifier or is reserved
/// (GL_*, names containing "__", names the prelude or vgpu define), a value with a line break,
/// a zero workgroup dimension, or a body that brings its own #version line.
std::string assemble_glsl(std::string_view body, const std::map<std::string, std::string>& defines,
                          const std::array<std::uint32_t, 3>& workgroup_size, GlslTarget target,
                          std::uint32_t params_binding);

/// Returns the GLSL body of built-in kernel name ("matmul", "axpy", "elementwise",
/// "reduce_sum", "softmax_rows"), as embedded at build time; an empty view for other names.
/// The view points into static storage and stays valid for the life of the process.
std::string_view builtin_glsl(std::string_view name);

/// Returns the prelude text assemble_glsl inserts (core/kernels/glsl/prelude.glsl).
std::string_view glsl_prelude();

}  // namespace vgpu::kernels
