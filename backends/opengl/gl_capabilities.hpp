// SPDX-License-Identifier: Apache-2.0
// backends/opengl/gl_capabilities.hpp — which SPIR-V capabilities each of the OpenGL
// backend's two module paths can take on a given context, from two tables:
//  - path A (GL_ARB_gl_spirv): the capabilities the GL 4.6 SPIR-V environment (and
//    GL_ARB_gl_spirv) lists, each with the GL version, GL extension or SPIR-V extension
//    (GL_SPIR_V_EXTENSIONS) that lets a driver accept it. Anything else must never reach the
//    driver: llvmpipe dies with SIGSEGV on a VulkanMemoryModel module, for one.
//  - path B (SPIRV-Cross GLSL): the capabilities whose cross-compiled text needs a GL
//    extension (16-bit types: GL_AMD_gpu_shader_half_float / GL_NV_gpu_shader5 …).
// Backend-internal. Thread-safety: pure functions of their inputs.
#pragma once

#include <string>
#include <vector>

namespace vgpu::opengl {

/// What a context offers that the tables ask about.
struct GlCapabilityContext {
  int version = 0;                            ///< e.g. 46 for OpenGL 4.6
  std::vector<std::string> extensions;        ///< GL_EXTENSIONS
  std::vector<std::string> spirv_extensions;  ///< GL_SPIR_V_EXTENSIONS (GL 4.6 / GL_ARB_spirv_extensions)
};

/// Returns the first of capabilities (SPIR-V names) that the context's GL_ARB_gl_spirv
/// cannot take, with what would allow it ("VulkanMemoryModel (not in OpenGL's SPIR-V
/// environment)"); empty when the driver may get the module.
std::string capability_outside_gl_spirv(const std::vector<std::string>& capabilities, const GlCapabilityContext& gl);

/// Returns the first of capabilities that GLSL cross-compiled by SPIRV-Cross cannot express
/// on the context, with the extensions that would ("Float16 (needs GL_AMD_gpu_shader_half_float
/// or GL_NV_gpu_shader5)"); empty when none.
std::string capability_outside_cross_glsl(const std::vector<std::string>& capabilities, const GlCapabilityContext& gl);

}  // namespace vgpu::opengl
