// SPDX-License-Identifier: Apache-2.0
// vgpu/shader_toolchain.hpp — the SPIR-V toolchain component: the GLSL compiler (shaderc and
// glslang), the SPIR-V validator (SPIRV-Tools) and reflection and GLSL cross-compilation
// (SPIRV-Cross). They are most of what a GPU build of vgpu weighs, and only the Vulkan and
// OpenGL backends need them, so they live in a separate module, libvgpu_shader_toolchain.so,
// loaded at run time on first use like the vendor runtimes: a CPU- or CUDA-only application
// ships libvgpu without it (docs/platforms.md, "What to ship").
//
// The table below is the module's whole interface. Both sides come from one vgpu build: the
// module carries its build id and a different one is refused, so C++ types may cross. Nothing
// throws across it; a failure comes back as a ToolchainFailure that the caller raises as a
// vgpu::Error.
// Thread-safety: shader_toolchain() and shader_toolchain_problem() are safe from any thread;
// every function of the table is safe from any number of threads at once.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "vgpu/error.hpp"
#include "vgpu/specialization.hpp"

namespace vgpu::toolchain {

/// The client API a module is compiled or validated for.
enum class TargetEnv { vulkan1_1, vulkan1_2, vulkan1_3, opengl4_5 };

/// One specialization constant's final value for a pipeline (what VkSpecializationMapEntry /
/// glSpecializeShader take).
struct SpecEntry {
  std::uint32_t id = 0;
  std::uint32_t bits = 0;
};

/// A failure inside the module, raised by the caller as Error(category, problem, fix).
struct ToolchainFailure {
  ErrorCategory category = ErrorCategory::internal;
  std::string problem;
  std::string fix;
};

/// One GLSL compile.
struct GlslRequest {
  std::string_view text;                                        ///< the whole shader text
  const std::map<std::string, std::string>* defines = nullptr;  ///< -D macros, or none
  TargetEnv env = TargetEnv::vulkan1_1;
  bool optimize = true;          ///< glslc -O (the body form); off keeps OpName for specialisation by name
  std::string_view kernel_name;  ///< tags the compiler log's lines
  std::string_view fix;          ///< the Fix hint of a compile error
};

/// The function table libvgpu_shader_toolchain.so exports through its one entry point,
/// extern "C" const ShaderToolchain* vgpu_shader_toolchain_table(std::uint32_t abi_version)
/// (nullptr for another ABI version).
/// Each function returns true on success and otherwise fills *failure.
struct ShaderToolchain {
  std::uint32_t abi_version = 0;   ///< kToolchainAbiVersion of the build
  const char* build_id = nullptr;  ///< toolchain_build_id() of the build
  /// GLSL → SPIR-V words; *warnings gets the compiler log of a successful compile ("" if none).
  bool (*compile_glsl)(const GlslRequest& request, std::vector<std::uint32_t>* words, std::string* warnings,
                       ToolchainFailure* failure) noexcept = nullptr;
  /// Validates words (whole, with the magic) for env: *problem is "" when valid, else the
  /// validator's message.
  bool (*validate)(std::span<const std::uint32_t> words, TargetEnv env, std::string* problem,
                   ToolchainFailure* failure) noexcept = nullptr;
  /// Reflects valid words (shader::reflect's contract, vgpu/shader/shader_tools.hpp).
  bool (*reflect)(std::span<const std::uint32_t> words, const std::string& entry, const std::string& kernel_name,
                  std::span<const SpecEntry> spec, KernelReflection* out, ToolchainFailure* failure) noexcept = nullptr;
  /// Cross-compiles valid words to OpenGL GLSL (shader::to_opengl_glsl's contract).
  bool (*to_opengl_glsl)(std::span<const std::uint32_t> words, const std::string& entry,
                         std::span<const SpecEntry> spec, int glsl_version, const std::string& kernel_name,
                         std::string* out, ToolchainFailure* failure) noexcept = nullptr;
};

/// The table layout's version; bump it with any change to ShaderToolchain or the types it uses.
inline constexpr std::uint32_t kToolchainAbiVersion = 1;

/// This build's id (vgpu version, compiler and its version): a module of another build is refused.
const char* toolchain_build_id() noexcept;

/// The module's name without the OS's prefix and suffix (libvgpu_shader_toolchain.so on
/// Linux, vgpu_shader_toolchain.dll on Windows: platform::shared_library_file_name).
inline constexpr const char* kToolchainModuleBase = "vgpu_shader_toolchain";

/// Returns the loaded toolchain, or nullptr (then shader_toolchain_problem() says why). Loads
/// it once per process: from the folder of the binary that holds vgpu's code (libvgpu.so, or
/// a program that links vgpu statically), that folder's ../lib, then the dynamic loader's
/// search path; or uses the table linked into the program itself, when there is one.
const ShaderToolchain* shader_toolchain() noexcept;

/// Returns "" when the toolchain is loaded, or why it is not (where it looked, what failed).
const std::string& shader_toolchain_problem() noexcept;

/// Returns the toolchain, or throws unavailable with shader_toolchain_problem()'s reason.
const ShaderToolchain& require_shader_toolchain();

/// Throws failure as vgpu::Error (its category, problem and fix).
[[noreturn]] void raise(const ToolchainFailure& failure);

}  // namespace vgpu::toolchain
