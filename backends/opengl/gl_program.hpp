// SPDX-License-Identifier: Apache-2.0
// backends/opengl/gl_program.hpp — compiling and linking compute programs on a device's worker
// (gl_program.cpp), shared by the GLSL body form and the module forms (gl_module.cpp).
// Thread-safety: every function runs on the worker thread that owns the current context.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "gl_api.hpp"

namespace vgpu::opengl {

/// Returns shader's info log, trimmed ("(the driver gave no log)" when empty).
std::string shader_log(GLuint shader);

/// Compiles GLSL text into a compute shader; throws compile_error with the driver's log and fix.
GLuint compile_text_w(const std::string& name, const std::string& text, std::string_view fix);

/// Links compiled shader (deleted afterwards) into a program; fills *binary with
/// [u32 format][glGetProgramBinary bytes] when given (empty when the driver gives none).
/// Throws compile_error with the link log.
GLuint link_program_w(const std::string& name, GLuint shader, std::vector<std::uint8_t>* binary);

}  // namespace vgpu::opengl
