// SPDX-License-Identifier: Apache-2.0
// core/shader/src/toolchain_calls.cpp — the shader layer's GLSL compiles, SPIR-V validation,
// reflection and OpenGL GLSL, made through the run-time-loaded SPIR-V toolchain
// (vgpu/shader_toolchain.hpp): each call throws unavailable, with the reason and a Fix, when
// the module is not there, and raises the module's failures as vgpu errors.
#include <cstdio>
#include <cstring>
#include <utility>

#include "vgpu/error.hpp"
#include "vgpu/log.hpp"
#include "vgpu/shader/shader_tools.hpp"
#include "vgpu/shader_toolchain.hpp"
#include "vgpu/spirv_instructions.hpp"

namespace vgpu::shader {
namespace {

const char* env_name(TargetEnv env) {
  switch (env) {
    case TargetEnv::vulkan1_2:
      return "Vulkan 1.2";
    case TargetEnv::vulkan1_3:
      return "Vulkan 1.3";
    case TargetEnv::opengl4_5:
      return "OpenGL 4.5";
    case TargetEnv::vulkan1_1:
      break;
  }
  return "Vulkan 1.1";
}

// Calls the loaded toolchain's function fn with args and a failure to fill; raises the failure
// as a vgpu::Error (unavailable, with the reason, when the module is not there).
template <class Fn, class... Args>
void call(Fn toolchain::ShaderToolchain::*fn, Args&&... args) {
  toolchain::ToolchainFailure failure;
  if (!(toolchain::require_shader_toolchain().*fn)(std::forward<Args>(args)..., &failure)) toolchain::raise(failure);
}

std::vector<std::uint32_t> compile(const toolchain::GlslRequest& request) {
  std::vector<std::uint32_t> words;
  std::string warnings;
  call(&toolchain::ShaderToolchain::compile_glsl, request, &words, &warnings);
  if (!warnings.empty())
    log(LogLevel::debug, "GLSL kernel '" + std::string(request.kernel_name) + "' compiled with warnings:\n" + warnings);
  return words;
}

}  // namespace

std::vector<std::uint32_t> compile_glsl_body(const std::string& assembled_text, const std::string& kernel_name) {
  toolchain::GlslRequest r;
  r.text = assembled_text;
  r.kernel_name = kernel_name;
  r.fix = "fix the GLSL error at the line shown (line numbers count from the first line of the GLSL source).";
  return compile(r);  // optimised, as glslc -O builds L3
}

std::vector<std::uint32_t> compile_glsl_shader(std::string_view text, const std::map<std::string, std::string>& defines,
                                               TargetEnv env, const std::string& kernel_name) {
  toolchain::GlslRequest r;
  r.text = text;
  r.defines = &defines;
  r.env = env;
  r.kernel_name = kernel_name;
  // Not optimised: the optimiser strips OpName, and constants are specialised by name (the
  // driver optimises anyway).
  r.optimize = false;
  r.fix =
      "fix the GLSL error at the line shown (line numbers are those of the shader text as given, its "
      "#version line being line 1).";
  return compile(r);
}

std::vector<std::uint32_t> spirv_words(std::string_view bytes, TargetEnv env, const std::string& kernel_name) {
  const std::string what = "the SPIR-V of kernel '" + kernel_name + "'";
  const char* fix =
      "pass the module's bytes unchanged (KernelSource::add_spirv with the words glslc or the "
      "compiler wrote), compiled for the device's Vulkan version (spirv-val --target-env checks it).";
  if (bytes.size() % 4 != 0 || bytes.size() < 20)
    fail(ErrorCategory::compile_error,
         what + " is " + std::to_string(bytes.size()) + " bytes, not a whole number of at least 5 32-bit words.", fix);
  std::vector<std::uint32_t> words(bytes.size() / 4);
  std::memcpy(words.data(), bytes.data(), bytes.size());
  if (words[0] != spirv::kMagic) {
    char hex[16];
    std::snprintf(hex, sizeof hex, "0x%08x", words[0]);
    fail(ErrorCategory::compile_error,
         what + " starts with " + hex + ", not the SPIR-V magic 0x07230203 (little-endian words).", fix);
  }
  std::string problem;
  call(&toolchain::ShaderToolchain::validate, std::span<const std::uint32_t>(words), env, &problem);
  if (!problem.empty())
    fail(ErrorCategory::compile_error, what + " is not valid SPIR-V for " + env_name(env) + ": " + problem, fix);
  return words;
}

KernelReflection reflect(std::span<const std::uint32_t> words, const std::string& entry, const std::string& kernel_name,
                         std::span<const SpecEntry> spec) {
  KernelReflection out;
  call(&toolchain::ShaderToolchain::reflect, words, entry, kernel_name, spec, &out);
  return out;
}

std::string to_opengl_glsl(std::span<const std::uint32_t> words, const std::string& entry,
                           std::span<const SpecEntry> spec, int glsl_version, const std::string& kernel_name) {
  std::string out;
  call(&toolchain::ShaderToolchain::to_opengl_glsl, words, entry, spec, glsl_version, kernel_name, &out);
  return out;
}

}  // namespace vgpu::shader
