// SPDX-License-Identifier: Apache-2.0
// core/shader/toolchain/gl_cross.cpp — GLSL text cross-compiled by SPIRV-Cross from a module
// in its OpenGL form, for drivers without GL_ARB_gl_spirv.
#include <spirv_cross_c.h>

#include <memory>
#include <type_traits>

#include "toolchain_impl.hpp"

namespace vgpu::toolchain::impl {
namespace {

/// Owns a SPIRV-Cross context (everything it allocates goes with it).
struct ContextDeleter {
  void operator()(spvc_context c) const noexcept { spvc_context_destroy(c); }
};
using Context = std::unique_ptr<std::remove_pointer_t<spvc_context>, ContextDeleter>;

[[noreturn]] void cross_failed(spvc_context ctx, const std::string& kernel_name, const char* step) {
  const char* why = spvc_context_get_last_error_string(ctx);
  fail(ErrorCategory::not_supported,
       "kernel '" + kernel_name + "' cannot be expressed as OpenGL GLSL (SPIRV-Cross, " + step +
           "): " + (why && *why ? why : "no message"),
       "run it on a driver with GL_ARB_gl_spirv (OpenGL 4.6), or on Vulkan, or avoid the construct named.");
}

}  // namespace

std::string to_opengl_glsl(std::span<const std::uint32_t> words, const std::string& entry,
                           std::span<const SpecEntry> spec, int glsl_version, const std::string& kernel_name) {
  // GL GLSL has no specialization: each constant's value becomes its default, which
  // SPIRV-Cross then writes (the local size's constants included).
  const std::vector<std::uint32_t> baked = with_spec_defaults(words, spec);
  spvc_context raw = nullptr;
  if (spvc_context_create(&raw) != SPVC_SUCCESS)
    fail(ErrorCategory::out_of_memory, "SPIRV-Cross could not create a context.", "free memory and try again.");
  Context ctx(raw);
  spvc_parsed_ir ir = nullptr;
  if (spvc_context_parse_spirv(raw, baked.data(), baked.size(), &ir) != SPVC_SUCCESS)
    cross_failed(raw, kernel_name, "parsing");
  spvc_compiler compiler = nullptr;
  if (spvc_context_create_compiler(raw, SPVC_BACKEND_GLSL, ir, SPVC_CAPTURE_MODE_TAKE_OWNERSHIP, &compiler) !=
      SPVC_SUCCESS)
    cross_failed(raw, kernel_name, "creating the GLSL compiler");
  if (spvc_compiler_set_entry_point(compiler, entry.c_str(), SpvExecutionModelGLCompute) != SPVC_SUCCESS)
    fail(ErrorCategory::compile_error, "kernel '" + kernel_name + "' has no compute entry point '" + entry + "'.",
         "name the module's GLCompute entry point (DialectSource::entry).");

  spvc_compiler_options options = nullptr;
  if (spvc_compiler_create_compiler_options(compiler, &options) != SPVC_SUCCESS)
    cross_failed(raw, kernel_name, "options");
  spvc_compiler_options_set_uint(options, SPVC_COMPILER_OPTION_GLSL_VERSION, static_cast<unsigned>(glsl_version));
  spvc_compiler_options_set_bool(options, SPVC_COMPILER_OPTION_GLSL_ES, SPVC_FALSE);
  spvc_compiler_options_set_bool(options, SPVC_COMPILER_OPTION_GLSL_VULKAN_SEMANTICS, SPVC_FALSE);
  spvc_compiler_install_compiler_options(compiler, options);

  const char* text = nullptr;
  if (spvc_compiler_compile(compiler, &text) != SPVC_SUCCESS || text == nullptr)
    cross_failed(raw, kernel_name, "compiling");
  return std::string(text);
}

}  // namespace vgpu::toolchain::impl
