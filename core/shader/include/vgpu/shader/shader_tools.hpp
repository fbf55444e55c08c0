// SPDX-License-Identifier: Apache-2.0
// vgpu/shader/shader_tools.hpp — the SPIR-V toolchain the GPU backends share (layer
// vgpu_shader, core/shader/, built when Vulkan or OpenGL is): GLSL → SPIR-V (shaderc),
// validation (SPIRV-Tools), reflection (SPIRV-Cross), specialization and the OpenGL forms of a
// Vulkan-flavoured module. The third-party parts run in the run-time-loaded module
// libvgpu_shader_toolchain.so (vgpu/shader_toolchain.hpp; core/shader/toolchain/): those
// functions throw unavailable, with a Fix, where it is missing. Backends include this; core
// never does.
// Thread-safety: every function is safe to call from any number of threads at once.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "vgpu/kernel_source.hpp"
#include "vgpu/shader_toolchain.hpp"
#include "vgpu/specialization.hpp"

namespace vgpu::shader {

/// The client API a module is compiled or validated for.
using toolchain::TargetEnv;

/// Compiles text, a complete GLSL compute shader exactly as the user wrote it (its own
/// #version, #extension, #pragma, layouts), to SPIR-V for env, with defines as -D; entry is
/// the entry point name (GLSL: "main"). Throws compile_error carrying the compiler log, whose
/// line numbers are the user's own ("<kernel_name>:<line>: error: ...").
std::vector<std::uint32_t> compile_glsl_shader(std::string_view text, const std::map<std::string, std::string>& defines,
                                               TargetEnv env, const std::string& kernel_name);

/// Compiles assembled_text (kernels::assemble_glsl's output, the body form) for Vulkan 1.1.
/// Throws compile_error carrying the compiler log.
std::vector<std::uint32_t> compile_glsl_body(const std::string& assembled_text, const std::string& kernel_name);

/// Returns the SPIR-V words of a dialect::spirv entry's bytes, after checking they are whole
/// little-endian words starting with the SPIR-V magic and that SPIRV-Tools validates them for
/// env; throws compile_error naming the problem (the validator's message) otherwise.
std::vector<std::uint32_t> spirv_words(std::string_view bytes, TargetEnv env, const std::string& kernel_name);

/// One constant's final value for a pipeline (what VkSpecializationMapEntry / glSpecializeShader take).
using toolchain::SpecEntry;

/// Reflects module words (valid SPIR-V) through SPIRV-Cross: the GLCompute entry point entry
/// (compile_error when missing), its buffer bindings (storage/uniform, access from
/// NonReadable/NonWritable, fixed size and runtime-array stride), push-constant size, local
/// size (with the ids of constants that set it), specialization constants (id, name, type,
/// default) and declared capabilities. Throws not_supported naming any other kind of
/// resource (images, samplers, atomic counters…) and invalid_argument for two bindings that
/// share one binding number in different sets. With spec (resolve_specialization's output),
/// what depends on specialization constants (local size, arrays they size, their values) is
/// reported as specialised; without, at the module's defaults.
KernelReflection reflect(std::span<const std::uint32_t> words, const std::string& entry, const std::string& kernel_name,
                         std::span<const SpecEntry> spec = {});

/// Resolves what a compile specialises, against the module's reflection:
/// - options.spec_constants by id or name (name unknown → invalid_argument listing the
///   module's constants; a value whose type does not fit the constant's → invalid_argument;
///   an int given for a uint constant converts when it is not negative);
/// - the local size: unset options.workgroup_size → the module's own; set → the ids that
///   set the local size get it, and a fixed local size that differs is invalid_argument;
/// - a user constant in [kReservedSpecIdFirst, kReservedSpecIdLast] → invalid_argument with a
///   Fix hint (only vgpu's body prelude may use that range).
/// Returns the entries sorted by id, and sets *local_size to the size the kernel runs with.
std::vector<SpecEntry> resolve_specialization(const KernelReflection& reflection, const CompileOptions& options,
                                              bool reserved_ids_allowed, const std::string& kernel_name,
                                              std::array<std::uint32_t, 3>* local_size);

/// Returns words with the push-constant block turned into an std430 read-only storage
/// buffer at set 0, binding params_binding (OpenGL has no push constants; vgpu's GL backend
/// feeds params through that binding), and every DescriptorSet decoration set to 0.
/// invalid_argument when binding params_binding is already taken.
std::vector<std::uint32_t> push_constants_to_storage_buffer(std::span<const std::uint32_t> words,
                                                            std::uint32_t params_binding);

/// Cross-compiles module words (as push_constants_to_storage_buffer returns them) to GLSL
/// `#version <glsl_version>` compute text for an OpenGL driver without GL_ARB_gl_spirv, with
/// the constants of spec baked in; throws not_supported naming what GLSL cannot express.
std::string to_opengl_glsl(std::span<const std::uint32_t> words, const std::string& entry,
                           std::span<const SpecEntry> spec, int glsl_version, const std::string& kernel_name);

}  // namespace vgpu::shader
