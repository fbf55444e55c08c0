// SPDX-License-Identifier: Apache-2.0
// core/shader/toolchain/toolchain_impl.hpp — what libvgpu_shader_toolchain.so implements, as
// plain C++ that reports failure with vgpu::fail (toolchain_entry.cpp turns each function into
// the noexcept table of vgpu/shader_toolchain.hpp). Only this module's sources include it.
// Thread-safety: every function is safe from any number of threads at once.
#pragma once

#include <cstdint>
#include <exception>
#include <new>
#include <span>
#include <string>
#include <vector>

#include "vgpu/shader_toolchain.hpp"

namespace vgpu::toolchain::impl {

/// Runs work, reporting whatever it throws in *failure instead (no exception leaves the
/// module); returns whether work succeeded. Every function of the module's table is one call.
template <class Work>
bool guarded(ToolchainFailure* failure, Work&& work) noexcept {
  try {
    work();
    return true;
  } catch (const Error& e) {
    *failure = ToolchainFailure{e.category(), e.problem(), e.fix()};
  } catch (const std::bad_alloc&) {
    *failure = ToolchainFailure{ErrorCategory::out_of_memory, "the SPIR-V toolchain ran out of host memory.",
                                "free host memory and try again."};
  } catch (const std::exception& e) {
    *failure = ToolchainFailure{ErrorCategory::internal, std::string("the SPIR-V toolchain failed: ") + e.what(),
                                "report this as a vgpu bug, with the kernel and vgpu-probe --json."};
  } catch (...) {
    *failure = ToolchainFailure{ErrorCategory::internal, "the SPIR-V toolchain failed with an unknown exception.",
                                "report this as a vgpu bug, with the kernel and vgpu-probe --json."};
  }
  return false;
}

/// GLSL → SPIR-V through shaderc; *warnings gets a successful compile's log.
std::vector<std::uint32_t> compile_glsl(const GlslRequest& request, std::string* warnings);

/// Returns "" when SPIRV-Tools validates words for env, else its message.
std::string validation_problem(std::span<const std::uint32_t> words, TargetEnv env);

/// Reflects words through SPIRV-Cross (shader::reflect's contract).
KernelReflection reflect(std::span<const std::uint32_t> words, const std::string& entry, const std::string& kernel_name,
                         std::span<const SpecEntry> spec);

/// Cross-compiles words to OpenGL GLSL through SPIRV-Cross (shader::to_opengl_glsl's contract).
std::string to_opengl_glsl(std::span<const std::uint32_t> words, const std::string& entry,
                           std::span<const SpecEntry> spec, int glsl_version, const std::string& kernel_name);

/// Returns words with the default of every constant decorated SpecId n that spec sets replaced
/// by spec's value (booleans: OpSpecConstantTrue/False swapped), so SPIRV-Cross reflects, or
/// writes as GLSL, the specialised module.
std::vector<std::uint32_t> with_spec_defaults(std::span<const std::uint32_t> words, std::span<const SpecEntry> spec);

/// Returns words as SPIRV-Cross can reflect them: unchanged, or where the module declares
/// cooperative-matrix types (which Debian 12's SPIRV-Cross cannot parse), those types as
/// 4-vectors, their constants dropped and every function body one OpUnreachable — the
/// interface (bindings, push constants, local size, spec constants, capabilities) untouched.
std::vector<std::uint32_t> reflection_view(std::span<const std::uint32_t> words);

/// Returns the SPIR-V name of capability ("Float16", "VulkanMemoryModel"), or "Capability<n>".
std::string capability_name(std::uint32_t capability);

}  // namespace vgpu::toolchain::impl
