// SPDX-License-Identifier: Apache-2.0
// backends/opengl/gl_glsl_check.hpp — GLSL that vgpu must not hand to a GL driver.
// Backend-internal.
#pragma once

#include <map>
#include <string>
#include <string_view>

namespace vgpu::opengl {

/// Throws compile_error (with a Fix hint) when a kernel's GLSL body or define values use a
/// construct that only SPIR-V targets have and that GL drivers must never see: specialization
/// constants (`constant_id`, `local_size_x_id` ...). Mesa refuses them cleanly, but NVIDIA's
/// GLSL compiler (driver 580) dies with SIGSEGV inside glCompileShader on any shader declaring
/// one, taking the process down. Comments are skipped; any other occurrence of those
/// identifiers counts (a macro could paste them into a layout qualifier).
void check_glsl_for_gl(std::string_view kernel_name, std::string_view body,
                       const std::map<std::string, std::string>& defines);

}  // namespace vgpu::opengl
