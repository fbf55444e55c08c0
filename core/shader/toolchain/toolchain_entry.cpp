// SPDX-License-Identifier: Apache-2.0
// core/shader/toolchain/toolchain_entry.cpp — the one symbol libvgpu_shader_toolchain.so
// exports: its table (vgpu/shader_toolchain.hpp), each function a noexcept wrapper that turns
// whatever the implementation throws into a ToolchainFailure, so no exception crosses the
// module's boundary.
#include "toolchain_impl.hpp"

namespace vgpu::toolchain {
namespace {

using impl::guarded;

bool compile_glsl(const GlslRequest& request, std::vector<std::uint32_t>* words, std::string* warnings,
                  ToolchainFailure* failure) noexcept {
  return guarded(failure, [&] { *words = impl::compile_glsl(request, warnings); });
}

bool validate(std::span<const std::uint32_t> words, TargetEnv env, std::string* problem,
              ToolchainFailure* failure) noexcept {
  return guarded(failure, [&] { *problem = impl::validation_problem(words, env); });
}

bool reflect(std::span<const std::uint32_t> words, const std::string& entry, const std::string& kernel_name,
             std::span<const SpecEntry> spec, KernelReflection* out, ToolchainFailure* failure) noexcept {
  return guarded(failure, [&] { *out = impl::reflect(words, entry, kernel_name, spec); });
}

bool to_opengl_glsl(std::span<const std::uint32_t> words, const std::string& entry, std::span<const SpecEntry> spec,
                    int glsl_version, const std::string& kernel_name, std::string* out,
                    ToolchainFailure* failure) noexcept {
  return guarded(failure, [&] { *out = impl::to_opengl_glsl(words, entry, spec, glsl_version, kernel_name); });
}

}  // namespace
}  // namespace vgpu::toolchain

/// The module's entry point: its table for abi_version, or nullptr for another version.
extern "C" __attribute__((visibility("default"))) const vgpu::toolchain::ShaderToolchain* vgpu_shader_toolchain_table(
    std::uint32_t abi_version) {
  using namespace vgpu::toolchain;
  static const ShaderToolchain table{kToolchainAbiVersion, VGPU_TOOLCHAIN_BUILD_ID, &compile_glsl, &validate, &reflect,
                                     &to_opengl_glsl};
  return abi_version == kToolchainAbiVersion ? &table : nullptr;
}
