// SPDX-License-Identifier: Apache-2.0
// core/shader/toolchain/spirv_validate.cpp — SPIR-V checked by SPIRV-Tools' validator before
// any driver sees it (lavapipe, for one, does not validate and can crash on a malformed module).
#include <spirv-tools/libspirv.h>

#include <memory>

#include "toolchain_impl.hpp"

namespace vgpu::toolchain::impl {
namespace {

struct ContextDeleter {
  void operator()(spv_context c) const noexcept { spvContextDestroy(c); }
};
struct OptionsDeleter {
  void operator()(spv_validator_options o) const noexcept { spvValidatorOptionsDestroy(o); }
};

spv_target_env spv_env(TargetEnv env) {
  switch (env) {
    case TargetEnv::vulkan1_2:
      return SPV_ENV_VULKAN_1_2;
    case TargetEnv::vulkan1_3:
      return SPV_ENV_VULKAN_1_3;
    case TargetEnv::opengl4_5:
      return SPV_ENV_OPENGL_4_5;
    case TargetEnv::vulkan1_1:
      break;
  }
  return SPV_ENV_VULKAN_1_1;
}

}  // namespace

std::string validation_problem(std::span<const std::uint32_t> words, TargetEnv env) {
  const std::unique_ptr<spv_context_t, ContextDeleter> context(spvContextCreate(spv_env(env)));
  const std::unique_ptr<spv_validator_options_t, OptionsDeleter> options(spvValidatorOptionsCreate());
  if (!context || !options)
    fail(ErrorCategory::out_of_memory, "SPIRV-Tools could not create a validator.", "free host memory and try again.");
  spv_const_binary_t binary{words.data(), words.size()};
  spv_diagnostic diagnostic = nullptr;
  const spv_result_t valid = spvValidateWithOptions(context.get(), options.get(), &binary, &diagnostic);
  std::string message = diagnostic && diagnostic->error ? diagnostic->error : "";
  spvDiagnosticDestroy(diagnostic);
  if (valid == SPV_SUCCESS) return {};
  while (!message.empty() && (message.back() == '\n' || message.back() == ' ')) message.pop_back();
  return message.empty() ? std::string("(the validator gave no message)") : message;
}

}  // namespace vgpu::toolchain::impl
