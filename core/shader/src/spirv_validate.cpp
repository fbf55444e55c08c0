// SPDX-License-Identifier: Apache-2.0
// core/shader/src/spirv_validate.cpp — a dialect::spirv entry's bytes checked as SPIR-V with
// SPIRV-Tools before any driver sees them.
#include <spirv-tools/libspirv.h>

#include <cstdio>
#include <cstring>
#include <memory>

#include "vgpu/error.hpp"
#include "vgpu/shader/shader_tools.hpp"

namespace vgpu::shader {
namespace {

constexpr std::uint32_t kSpirvMagic = 0x07230203u;

struct ContextDeleter {
  void operator()(spv_context c) const noexcept { spvContextDestroy(c); }
};
struct OptionsDeleter {
  void operator()(spv_validator_options o) const noexcept { spvValidatorOptionsDestroy(o); }
};

// Each TargetEnv with SPIRV-Tools' environment and the name messages give it, kept together so
// the two cannot drift apart.
struct EnvInfo {
  TargetEnv env;
  spv_target_env spv;
  const char* name;
};
constexpr EnvInfo kEnvs[] = {{TargetEnv::vulkan1_1, SPV_ENV_VULKAN_1_1, "Vulkan 1.1"},
                             {TargetEnv::vulkan1_2, SPV_ENV_VULKAN_1_2, "Vulkan 1.2"},
                             {TargetEnv::vulkan1_3, SPV_ENV_VULKAN_1_3, "Vulkan 1.3"},
                             {TargetEnv::opengl4_5, SPV_ENV_OPENGL_4_5, "OpenGL 4.5"}};

const EnvInfo& env_info(TargetEnv env) {
  for (const EnvInfo& e : kEnvs)
    if (e.env == env) return e;
  static constexpr EnvInfo kUnknown{TargetEnv::vulkan1_1, SPV_ENV_VULKAN_1_1, "?"};  // as before: no name
  return kUnknown;
}

}  // namespace

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
  if (words[0] != kSpirvMagic) {
    char hex[16];
    std::snprintf(hex, sizeof hex, "0x%08x", words[0]);
    fail(ErrorCategory::compile_error,
         what + " starts with " + hex + ", not the SPIR-V magic 0x07230203 (little-endian words).", fix);
  }
  const std::unique_ptr<spv_context_t, ContextDeleter> context(spvContextCreate(env_info(env).spv));
  const std::unique_ptr<spv_validator_options_t, OptionsDeleter> options(spvValidatorOptionsCreate());
  if (!context || !options)
    fail(ErrorCategory::out_of_memory, "SPIRV-Tools could not create a validator for " + what + ".",
         "free host memory and try again.");
  spv_const_binary_t binary{words.data(), words.size()};
  spv_diagnostic diagnostic = nullptr;
  const spv_result_t valid = spvValidateWithOptions(context.get(), options.get(), &binary, &diagnostic);
  std::string message = diagnostic && diagnostic->error ? diagnostic->error : "";
  spvDiagnosticDestroy(diagnostic);
  if (valid != SPV_SUCCESS)
    fail(ErrorCategory::compile_error,
         what + " is not valid SPIR-V for " + env_info(env).name + ": " +
             (message.empty() ? std::string("(the validator gave no message)") : message),
         fix);
  return words;
}

}  // namespace vgpu::shader
