// SPDX-License-Identifier: Apache-2.0
// tests/fuzz/validator_toolchain.cpp — the fuzz targets' SPIR-V toolchain: the module's
// validator (core/shader/toolchain/spirv_validate.cpp) linked in, behind the entry point the
// loader looks for first, so spirv_problem validates as libvgpu_shader_toolchain.so would. The
// fuzz build has no GLSL compiler or SPIRV-Cross; nothing it runs compiles or reflects.
#include "../../core/shader/toolchain/toolchain_impl.hpp"

namespace {

bool validate(std::span<const std::uint32_t> words, vgpu::toolchain::TargetEnv env, std::string* problem,
              vgpu::toolchain::ToolchainFailure* failure) noexcept {
  return vgpu::toolchain::impl::guarded(failure,
                                        [&] { *problem = vgpu::toolchain::impl::validation_problem(words, env); });
}

}  // namespace

extern "C" const vgpu::toolchain::ShaderToolchain* vgpu_shader_toolchain_table(std::uint32_t abi_version) {
  static const vgpu::toolchain::ShaderToolchain table{
      vgpu::toolchain::kToolchainAbiVersion, VGPU_TOOLCHAIN_BUILD_ID, nullptr, &validate, nullptr, nullptr};
  return abi_version == vgpu::toolchain::kToolchainAbiVersion ? &table : nullptr;
}
