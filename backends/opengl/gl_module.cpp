// SPDX-License-Identifier: Apache-2.0
// backends/opengl/gl_module.cpp — complete GLSL shaders and SPIR-V on OpenGL.
//
// Both dialects become one SPIR-V module per (dialect, code, entry, defines), kept in the
// device's RAM: a complete shader is compiled once by the shader layer (Vulkan 1.1 target, so
// the Vulkan-flavoured text compiles exactly as written), SPIR-V bytes are validated; the
// module is reflected and rewritten for GL (push constants → vgpu's params SSBO, every
// descriptor set 0). Each compile then only specialises it:
//  - path A (GL_ARB_gl_spirv, unless VGPU_GL_SPIRV=0): glShaderBinary + glSpecializeShader;
//  - path B: SPIRV-Cross GLSL with the constants baked in, compiled by the driver; also for
//    a module declaring a SPIR-V capability outside OpenGL's SPIR-V environment
//    (gl_capabilities.hpp), which path A must never hand to the driver.
// Either is one pipeline_builds; only the GLSL front end counts in source_compiles. The front
// end's SPIR-V goes to L2 too (EntryKind::spirv, keyed without the specialization), beside the
// program binaries of each specialisation (gl_program.cpp).
#include <algorithm>
#include <chrono>
#include <cstring>

#include "gl_capabilities.hpp"
#include "gl_device.hpp"
#include "gl_program.hpp"
#include "vgpu/backend/kernel_l2.hpp"
#include "vgpu/cache/kernel_key.hpp"
#include "vgpu/error.hpp"
#include "vgpu/log.hpp"
#include "vgpu/shader/shader_tools.hpp"

namespace vgpu::opengl {
namespace {

using SpecPairs = std::vector<std::pair<std::uint32_t, std::uint32_t>>;

// The RAM key of a module: everything the front end and the rewrite read.
std::string module_key(const DialectSource& code, const CompileOptions& options) {
  std::string key = code.dialect + '\x1f' + code.entry + '\x1f';
  if (code.dialect != dialect::spirv)
    for (const auto& [name, value] : options.defines) key += name + '=' + value + '\x1e';
  return key + '\x1f' + code.code;
}

// Returns the GLSL version SPIRV-Cross writes for a context whose GLSL is glsl.
int cross_glsl_version(int glsl) { return std::clamp(glsl, 430, 460); }

// Path A on the worker: the module as a SPIR-V shader, specialised, linked.
GLuint spirv_program_w(const std::string& name, const std::string& entry, const std::vector<std::uint32_t>& words,
                       const SpecPairs& spec, std::vector<std::uint8_t>* binary) {
  take_gl_error();
  const GLuint shader = glCreateShader(GL_COMPUTE_SHADER);
  glShaderBinary(1, &shader, GL_SHADER_BINARY_FORMAT_SPIR_V_ARB, words.data(),
                 static_cast<GLsizei>(words.size() * sizeof(std::uint32_t)));
  std::vector<GLuint> ids, values;
  for (const auto& [id, bits] : spec) ids.push_back(id), values.push_back(bits);
  // GL 4.6 core names it glSpecializeShader; a 4.5 context with the extension (llvmpipe) has the ARB name.
  PFNGLSPECIALIZESHADERPROC specialize = glad_glSpecializeShader ? glad_glSpecializeShader : glad_glSpecializeShaderARB;
  specialize(shader, entry.c_str(), static_cast<GLuint>(ids.size()), ids.data(), values.data());
  GLint ok = GL_FALSE;
  glGetShaderiv(shader, GL_COMPILE_STATUS, &ok);
  const GLenum error = take_gl_error();
  if (ok != GL_TRUE || error != GL_NO_ERROR) {
    std::string log = shader_log(shader);
    if (error != GL_NO_ERROR) log += " (" + gl_error_name(error) + ")";
    glDeleteShader(shader);
    fail(ErrorCategory::compile_error,
         "the OpenGL driver refused the SPIR-V of kernel '" + name + "' (GL_ARB_gl_spirv):\n" + log,
         "check that the module uses only what OpenGL SPIR-V allows (no Vulkan-only capabilities), or set "
         "VGPU_GL_SPIRV=0 to have vgpu cross-compile it to GLSL instead.");
  }
  return link_program_w(name, shader, binary);
}

}  // namespace

std::shared_ptr<const GlModule> GlDevice::module_for(const KernelSource& source, const DialectSource& code,
                                                     const CompileOptions& options) {
  const std::string key = module_key(code, options);
  {
    std::lock_guard lock(modules_mutex_);
    if (auto it = modules_.find(key); it != modules_.end()) return it->second;
  }
  // Built outside the lock: two threads may build one module at once; the first stored wins.
  std::vector<std::uint32_t> words;
  if (code.dialect == dialect::glsl_shader) {
    // The front end's SPIR-V also goes to L2 (kind spirv), keyed without what only
    // specialises it, so a later process with a program binary at hand skips it too.
    CompileOptions unspecialised = options;
    unspecialised.spec_constants.clear();
    unspecialised.workgroup_size = {0, 0, 0};
    const DeviceFingerprint& fp = desc_.info.fingerprint;
    KernelL2Entry l2(counters(), l2_store(), cache::EntryKind::spirv,
                     cache::make_kernel_key(source, code, unspecialised, fp), fp);
    if (l2.enabled())
      if (std::optional<std::vector<std::uint8_t>> payload = l2.load()) {  // validated by the store
        words.resize(payload->size() / 4);
        std::memcpy(words.data(), payload->data(), words.size() * 4);
        l2.hit();
      }
    if (words.empty()) {
      const auto start = std::chrono::steady_clock::now();
      words = shader::compile_glsl_shader(code.code, options.defines, shader::TargetEnv::vulkan1_1, source.name);
      counters().source_compiles.fetch_add(1, std::memory_order_relaxed);
      const auto cost = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start);
      l2.store(std::span(reinterpret_cast<const std::uint8_t*>(words.data()), words.size() * 4),
               static_cast<std::uint64_t>(cost.count()), source.name);
    }
  } else if (code.dialect == dialect::spirv) {
    words = shader::spirv_words(code.code, shader::TargetEnv::vulkan1_3, source.name);
  } else {
    fail(ErrorCategory::not_supported,
         "the OpenGL backend does not compile dialect '" + code.dialect + "' (kernel '" + source.name + "').",
         "give the kernel a glsl, glsl_shader or spirv entry.");
  }
  auto module = std::make_shared<GlModule>();
  module->reflection = shader::reflect(words, code.entry.empty() ? "main" : code.entry, source.name);
  const std::uint32_t limit = desc_.info.limits.max_bindings;
  for (const ReflectedBinding& b : module->reflection.bindings)
    if (b.binding >= limit)
      fail(ErrorCategory::invalid_argument,
           "kernel '" + source.name + "' declares buffer '" + b.name + "' at binding " + std::to_string(b.binding) +
               ", beyond the " + std::to_string(limit) + " bindings OpenGL device '" + desc_.info.name + "' offers.",
           "use bindings below " + std::to_string(limit) + " (vgpu-probe lists max_bindings).");
  choose_path(source, *module);
  module->words = shader::push_constants_to_storage_buffer(words, desc_.caps.params_binding());
  module->source_words = std::move(words);
  std::lock_guard lock(modules_mutex_);
  return modules_.emplace(key, std::move(module)).first->second;
}

void GlDevice::choose_path(const KernelSource& source, GlModule& module) const {
  // A driver given SPIR-V with a capability outside OpenGL's SPIR-V environment may crash
  // rather than refuse (llvmpipe: SIGSEGV on VulkanMemoryModel): such a module takes path B.
  const GlCapabilityContext& features = desc_.caps.shader_features;
  const std::vector<std::string>& caps = module.reflection.capabilities;
  if (spirv_path_) module.spirv_refusal = capability_outside_gl_spirv(caps, features);
  module.via_spirv = spirv_path_ && module.spirv_refusal.empty();
  if (module.via_spirv) return;
  // Checked before cross-compiling: SPIRV-Cross would write an #error the driver reports as
  // a compile error, where the truth is that this device lacks the extension.
  const std::string missing = capability_outside_cross_glsl(caps, features);
  if (missing.empty()) return;
  fail(ErrorCategory::not_supported,
       "kernel '" + source.name + "' cannot run on OpenGL device '" + desc_.info.name + "': its SPIR-V capability " +
           missing + " is more than the GLSL cross-compiled from it by SPIRV-Cross can express there" +
           (module.spirv_refusal.empty()
                ? std::string()
                : ", and the driver's GL_ARB_gl_spirv cannot take its capability " + module.spirv_refusal) +
           ".",
       "run the kernel on a device whose OpenGL driver offers the extension named, or on Vulkan; or write it without "
       "that capability (vgpu-probe lists the devices).");
}

SpecPairs GlDevice::specialise(const KernelSource& source, const GlModule& module, const CompileOptions& options,
                               GlKernelImpl& kernel) {
  std::array<std::uint32_t, 3> local_size{};
  const std::vector<shader::SpecEntry> entries =
      shader::resolve_specialization(module.reflection, options, false, source.name, &local_size);
  // What depends on the constants (local size, arrays they size) as this compile sets them.
  kernel.reflected = entries.empty()
                         ? module.reflection
                         : shader::reflect(module.source_words, module.reflection.entry, source.name, entries);
  kernel.reflected->local_size = local_size;
  SpecPairs out;
  out.reserve(entries.size());
  for (const shader::SpecEntry& e : entries) out.emplace_back(e.id, e.bits);
  return out;
}

GLuint GlDevice::program_from_module(const KernelSource& source, const DialectSource& code, const GlModule& module,
                                     const SpecPairs& spec, std::vector<std::uint8_t>* binary) {
  const std::string entry = code.entry.empty() ? "main" : code.entry;
  GLuint program = 0;
  if (module.via_spirv) {
    program = call(default_deadline(), "building a SPIR-V program",
                   [&] { return spirv_program_w(source.name, entry, module.words, spec, binary); });
  } else {
    std::vector<shader::SpecEntry> entries;
    for (const auto& [id, bits] : spec) entries.push_back(shader::SpecEntry{id, bits});
    std::string text;
    try {
      text = shader::to_opengl_glsl(module.words, entry, entries, cross_glsl_version(desc_.caps.glsl), source.name);
    } catch (const Error& e) {
      if (module.spirv_refusal.empty() || e.category() != ErrorCategory::not_supported) throw;
      // Path A was ruled out by a capability: the message names it, beside SPIRV-Cross's reason.
      fail(ErrorCategory::not_supported,
           e.problem() + " (OpenGL device '" + desc_.info.name + "' cannot take it as SPIR-V either: it declares " +
               module.spirv_refusal + ")",
           e.fix());
    }
    program = call(default_deadline(), "compiling a cross-compiled kernel", [&] {
      const GLuint shader = compile_text_w(
          source.name, text,
          "the GLSL was cross-compiled from the kernel's SPIR-V by SPIRV-Cross (line numbers are of that text); "
          "report the shader as a vgpu bug, or run it where the driver has GL_ARB_gl_spirv.");
      return link_program_w(source.name, shader, binary);
    });
  }
  counters().pipeline_builds.fetch_add(1, std::memory_order_relaxed);
  log(LogLevel::debug,
      "OpenGL kernel '" + source.name + "' built " +
          (module.via_spirv ? "from SPIR-V through GL_ARB_gl_spirv" : "from GLSL cross-compiled by SPIRV-Cross") +
          " (" + std::to_string(spec.size()) + " specialization constants)");
  return program;
}

}  // namespace vgpu::opengl
