// SPDX-License-Identifier: Apache-2.0
// core/shader/toolchain/glsl_compile.cpp — GLSL → SPIR-V through shaderc's C API (linked
// statically: Debian's libshaderc.so.1 crashes when linked directly) behind vgpu's error model.
#include <shaderc/shaderc.h>

#include <cstring>
#include <memory>

#include "toolchain_impl.hpp"
#include "vgpu/spirv_instructions.hpp"

namespace vgpu::toolchain::impl {
namespace {

// One compiler for the process: shaderc_compile_into_spv takes it by const and is documented
// safe to call from many threads at once, so sharing it needs no lock. A compiler per call is
// far dearer: releasing the last one tears down glslang's built-in symbol tables, which the
// next compile rebuilds (measured on the 2-core build machine: matmul 9 ms with the shared
// compiler, 92 ms with one per call; the first compile of a process pays ~95 ms once).
shaderc_compiler_t shared_compiler() {
  struct Holder {
    shaderc_compiler_t compiler = shaderc_compiler_initialize();
    ~Holder() {
      if (compiler) shaderc_compiler_release(compiler);
    }
  };
  static const Holder holder;
  if (!holder.compiler)
    fail(ErrorCategory::internal, "shaderc could not create a GLSL compiler.",
         "report this as a vgpu bug, with the platform and vgpu version.");
  return holder.compiler;
}

struct OptionsDeleter {
  void operator()(shaderc_compile_options_t o) const noexcept { shaderc_compile_options_release(o); }
};
struct ResultDeleter {
  void operator()(shaderc_compilation_result_t r) const noexcept { shaderc_result_release(r); }
};

std::string_view status_name(shaderc_compilation_status status) {
  switch (status) {
    case shaderc_compilation_status_success:
      return "success";
    case shaderc_compilation_status_invalid_stage:
      return "invalid stage";
    case shaderc_compilation_status_compilation_error:
      return "compilation error";
    case shaderc_compilation_status_internal_error:
      return "internal error";
    case shaderc_compilation_status_null_result_object:
      return "no result";
    case shaderc_compilation_status_invalid_assembly:
      return "invalid assembly";
    case shaderc_compilation_status_validation_error:
      return "SPIR-V validation error";
    case shaderc_compilation_status_transformation_error:
      return "SPIR-V optimisation error";
    case shaderc_compilation_status_configuration_error:
      return "configuration error";
  }
  return "unknown status";
}

shaderc_env_version env_version(TargetEnv env) {
  switch (env) {
    case TargetEnv::vulkan1_2:
      return shaderc_env_version_vulkan_1_2;
    case TargetEnv::vulkan1_3:
      return shaderc_env_version_vulkan_1_3;
    case TargetEnv::opengl4_5:
      return shaderc_env_version_opengl_4_5;
    case TargetEnv::vulkan1_1:
      break;
  }
  return shaderc_env_version_vulkan_1_1;
}

}  // namespace

// One compile, its log tagged "<kernel_name>:<line>:" with the line numbers of the text itself
// (shaderc gets the text unchanged and defines as -D, so nothing shifts them).
std::vector<std::uint32_t> compile_glsl(const GlslRequest& r, std::string* warnings) {
  const std::string kernel_name(r.kernel_name);
  const shaderc_compiler_t compiler = shared_compiler();
  const std::unique_ptr<shaderc_compile_options, OptionsDeleter> options(shaderc_compile_options_initialize());
  if (!options)
    fail(ErrorCategory::out_of_memory, "shaderc could not allocate compile options.",
         "free host memory and try again.");
  shaderc_compile_options_set_source_language(options.get(), shaderc_source_language_glsl);
  shaderc_compile_options_set_target_env(
      options.get(), r.env == TargetEnv::opengl4_5 ? shaderc_target_env_opengl : shaderc_target_env_vulkan,
      env_version(r.env));
  shaderc_compile_options_set_optimization_level(
      options.get(), r.optimize ? shaderc_optimization_level_performance : shaderc_optimization_level_zero);
  if (r.defines)
    for (const auto& [name, value] : *r.defines)
      shaderc_compile_options_add_macro_definition(options.get(), name.data(), name.size(), value.data(), value.size());

  const std::unique_ptr<shaderc_compilation_result, ResultDeleter> result(shaderc_compile_into_spv(
      compiler, r.text.data(), r.text.size(), shaderc_compute_shader, kernel_name.c_str(), "main", options.get()));
  if (!result)
    fail(ErrorCategory::out_of_memory, "shaderc could not allocate a result for GLSL kernel '" + kernel_name + "'.",
         "free host memory and try again.");

  const auto status = shaderc_result_get_compilation_status(result.get());
  const char* log_text = shaderc_result_get_error_message(result.get());
  std::string compiler_log = log_text ? log_text : "";
  while (!compiler_log.empty() && (compiler_log.back() == '\n' || compiler_log.back() == ' ')) compiler_log.pop_back();
  if (status != shaderc_compilation_status_success) {
    std::string problem = "GLSL kernel '" + kernel_name + "' failed to compile";
    if (status != shaderc_compilation_status_compilation_error)
      problem += " (" + std::string(status_name(status)) + ")";
    problem += ":\n" + (compiler_log.empty() ? std::string("(the compiler gave no log)") : compiler_log);
    fail(ErrorCategory::compile_error, problem, r.fix);
  }
  *warnings = std::move(compiler_log);

  const std::size_t bytes = shaderc_result_get_length(result.get());
  std::vector<std::uint32_t> spirv(bytes / sizeof(std::uint32_t));
  if (bytes != 0)
    std::memcpy(spirv.data(), shaderc_result_get_bytes(result.get()), spirv.size() * sizeof(std::uint32_t));
  if (bytes % sizeof(std::uint32_t) != 0 || spirv.size() < 5 || spirv[0] != spirv::kMagic)
    fail(ErrorCategory::internal,
         "shaderc returned " + std::to_string(bytes) + " bytes that are not SPIR-V for GLSL kernel '" + kernel_name +
             "'.",
         "report this as a vgpu bug, with the kernel source and the shaderc version.");
  return spirv;
}

}  // namespace vgpu::toolchain::impl
