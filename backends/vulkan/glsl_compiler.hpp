// backends/vulkan/glsl_compiler.hpp — run-time GLSL → SPIR-V for user kernels (built-in kernels
// come precompiled from L3, vgpu/cache/precompiled.hpp). Uses shaderc linked statically and
// privately into libvgpu (Debian's libshaderc.so.1 crashes when linked directly).
// Thread-safety: compile_glsl may be called from any number of threads at once.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace vgpu::vulkan {

/// Compiles assembled_text (the output of kernels::assemble_glsl(..., GlslTarget::vulkan, ...))
/// as a Vulkan 1.1 compute shader with entry point "main", optimised for performance, and
/// returns its SPIR-V words. kernel_name tags the compiler's messages ("<name>:<line>: error").
/// Throws Error(compile_error) carrying the compiler log when the text does not compile.
std::vector<std::uint32_t> compile_glsl(const std::string& assembled_text, const std::string& kernel_name);

}  // namespace vgpu::vulkan
