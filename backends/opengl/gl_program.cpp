// SPDX-License-Identifier: Apache-2.0
// backends/opengl/gl_program.cpp — compute programs from GLSL, and their binaries in L2.
//
// L2 entries (EntryKind::gl_program_binary) hold [u32 binary format][glGetProgramBinary bytes],
// keyed by make_kernel_key(source, glsl, options, fingerprint); the fingerprint names the
// driver (vendor, renderer, GL version, binary formats), so another driver never sees them.
// A binary is trusted only after glProgramBinary reports GL_LINK_STATUS true; otherwise the
// entry is dropped ("driver") and the kernel compiled from source. Drivers that offer no
// binary format (Mesa with its shader cache off) skip L2 entirely. Disk I/O runs on the
// calling thread; only GL work goes to the device's worker.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <optional>

#include "vgpu/kernels/glsl_source.hpp"
#include "gl_device.hpp"
#include "gl_glsl_check.hpp"
#include "gl_program.hpp"
#include "vgpu/backend/fingerprint.hpp"
#include "vgpu/backend/kernel_l2.hpp"
#include "vgpu/cache/disk_store.hpp"
#include "vgpu/cache/kernel_key.hpp"
#include "vgpu/error.hpp"

namespace vgpu::opengl {
namespace {

using Bytes = std::vector<std::uint8_t>;

// Drops trailing blanks and NULs, so "<log> Fix: ..." reads cleanly.
std::string trimmed(std::string log) {
  while (!log.empty() && (log.back() == '\n' || log.back() == ' ' || log.back() == '\0' || log.back() == '\r'))
    log.pop_back();
  return log.empty() ? "(the driver gave no log)" : log;
}

// Reads an object's info log through GL's two-call pattern (get_iv for the length, get_log for
// the text), trimmed: one reader for shaders and programs.
template <class GetIv, class GetLog>
std::string info_log(GLuint object, GetIv get_iv, GetLog get_log) {
  GLint length = 0;
  get_iv(object, GL_INFO_LOG_LENGTH, &length);
  std::string log(static_cast<std::size_t>(std::max(length, 1)), '\0');
  GLsizei got = 0;
  get_log(object, static_cast<GLsizei>(log.size()), &got, log.data());
  log.resize(static_cast<std::size_t>(got));
  return trimmed(std::move(log));
}

// Returns the program's link log.
std::string program_log(GLuint program) { return info_log(program, glGetProgramiv, glGetProgramInfoLog); }

// assemble_glsl writes "#version 450"; a 4.3/4.4 context only knows GLSL 430/440, where the
// built-ins compile unchanged (kernels using 4.50-only features then fail with compile_error).
std::string for_glsl_version(std::string text, int glsl) {
  constexpr std::string_view kVersion = "#version 450";
  if (glsl >= 430 && glsl < 450 && text.starts_with(kVersion))
    text.replace(0, kVersion.size(), "#version " + std::to_string(glsl));
  return text;
}

// Links a program from a stored [u32 format][bytes] payload; 0 when the driver refuses it.
GLuint program_from_binary_w(const Bytes& payload, const std::vector<GLint>& formats) {
  std::uint32_t format = 0;
  std::memcpy(&format, payload.data(), sizeof format);
  if (std::find(formats.begin(), formats.end(), static_cast<GLint>(format)) == formats.end()) return 0;
  take_gl_error();
  const GLuint program = glCreateProgram();
  glProgramBinary(program, static_cast<GLenum>(format), payload.data() + 4, static_cast<GLsizei>(payload.size() - 4));
  GLint linked = GL_FALSE;
  glGetProgramiv(program, GL_LINK_STATUS, &linked);  // always: a refused binary only shows here
  take_gl_error();                                   // GL_INVALID_ENUM/VALUE for a format or size the driver rejects
  if (linked == GL_TRUE) return program;
  glDeleteProgram(program);
  return 0;
}

}  // namespace

std::string shader_log(GLuint shader) { return info_log(shader, glGetShaderiv, glGetShaderInfoLog); }

GLuint compile_text_w(const std::string& name, const std::string& text, std::string_view fix) {
  const GLuint shader = glCreateShader(GL_COMPUTE_SHADER);
  const char* src = text.c_str();
  const auto length = static_cast<GLint>(text.size());
  glShaderSource(shader, 1, &src, &length);
  glCompileShader(shader);
  GLint ok = GL_FALSE;
  glGetShaderiv(shader, GL_COMPILE_STATUS, &ok);
  if (ok != GL_TRUE) {
    const std::string log = shader_log(shader);
    glDeleteShader(shader);
    fail(ErrorCategory::compile_error, "GLSL kernel '" + name + "' failed to compile:\n" + log, fix);
  }
  return shader;
}

GLuint link_program_w(const std::string& name, GLuint shader, Bytes* binary) {
  const GLuint program = glCreateProgram();
  glAttachShader(program, shader);
  if (binary) glProgramParameteri(program, GL_PROGRAM_BINARY_RETRIEVABLE_HINT, GL_TRUE);
  glLinkProgram(program);
  glDetachShader(program, shader);
  glDeleteShader(shader);
  GLint ok = GL_FALSE;
  glGetProgramiv(program, GL_LINK_STATUS, &ok);
  if (ok != GL_TRUE) {
    const std::string log = program_log(program);
    glDeleteProgram(program);
    fail(ErrorCategory::compile_error, "GLSL kernel '" + name + "' failed to link:\n" + log,
         "check the kernel's declared buffers and shared memory against the device limits (vgpu-probe).");
  }
  if (binary) {
    GLint size = 0;
    glGetProgramiv(program, GL_PROGRAM_BINARY_LENGTH, &size);
    binary->clear();
    if (size > 0) {
      binary->resize(4 + static_cast<std::size_t>(size));
      GLsizei got = 0;
      GLenum format = 0;
      glGetProgramBinary(program, size, &got, &format, binary->data() + 4);
      const auto fmt = static_cast<std::uint32_t>(format);
      std::memcpy(binary->data(), &fmt, sizeof fmt);
      binary->resize(got > 0 ? 4 + static_cast<std::size_t>(got) : 0);
    }
    if (take_gl_error() != GL_NO_ERROR) binary->clear();  // no binary is better than a bad one
  }
  return program;
}

namespace {

// Compiles and links text; fills *binary ([u32 format][bytes]) when binary is given.
GLuint program_from_source_w(const std::string& name, const std::string& text, Bytes* binary, Counters& counters) {
  const GLuint shader =
      compile_text_w(name, text, "correct the GLSL; line numbers count from the first line of the GLSL source.");
  counters.source_compiles.fetch_add(1, std::memory_order_relaxed);
  return link_program_w(name, shader, binary);
}

}  // namespace

GlKernelImpl::~GlKernelImpl() { device_.release_program(program); }

std::unique_ptr<KernelImpl> GlDevice::compile(const KernelSource& source, const DialectSource& code,
                                              const CompileOptions& options) {
  auto kernel = std::make_unique<GlKernelImpl>(*this);
  kernel->params_size = source.params_size;
  // A complete shader or SPIR-V: its module (from RAM after the first compile) and the
  // specialization are resolved before L2, so a bad value fails the same way on every call.
  const bool module_form = code.dialect != dialect::glsl;
  std::shared_ptr<const GlModule> module;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> spec;
  if (module_form) {
    module = module_for(source, code, options);
    spec = specialise(source, *module, options, *kernel);
  }
  const DeviceFingerprint& fp = desc_.info.fingerprint;
  // The two module paths build different programs: each keys its own binaries.
  const DeviceFingerprint key_fp =
      module_form ? make_fingerprint({{"device", fp.text}, {"gl_form", module->via_spirv ? "spirv" : "cross_glsl"}})
                  : fp;
  KernelL2Entry l2(counters(), l2_store(), cache::EntryKind::gl_program_binary,
                   l2_binaries_ ? cache::make_kernel_key(source, code, options, key_fp) : cache::KernelKey{}, fp);
  // Mesa (22.3, llvmpipe) crashes in glGetProgramiv(GL_PROGRAM_BINARY_LENGTH) on a program
  // linked from SPIR-V: path A keeps no binaries there (Mesa's own shader cache still works).
  const bool binaries =
      l2_binaries_ && !(module_form && module->via_spirv && desc_.caps.version.find("Mesa") != std::string::npos);
  const bool use_l2 = binaries && l2.enabled();

  if (use_l2) {
    if (std::optional<Bytes> payload = l2.load()) {
      const GLuint program = payload->size() > 4
                                 ? call(default_deadline(), "loading a program binary",
                                        [&] { return program_from_binary_w(*payload, desc_.caps.binary_formats); })
                                 : 0;
      if (program != 0) {
        l2.hit();
        kernel->program = program;
        label_object(GL_PROGRAM, program, source.name);
        return kernel;
      }
      // A binary from another driver build, or damaged: costs a compile, never a failure.
      l2.reject("driver");
    }
  }

  const auto start = std::chrono::steady_clock::now();
  Bytes binary;
  if (module_form) {
    kernel->program = program_from_module(source, code, *module, spec, use_l2 ? &binary : nullptr);
  } else {
    check_glsl_for_gl(source.name, code.code, options.defines);
    const std::string text =
        for_glsl_version(kernels::assemble_glsl(code.code, options.defines, options.workgroup_size_or_default(),
                                                kernels::GlslTarget::opengl, desc_.caps.params_binding()),
                         desc_.caps.glsl);
    kernel->program = call(default_deadline(), "compiling a kernel", [&] {
      return program_from_source_w(source.name, text, use_l2 ? &binary : nullptr, counters());
    });
  }
  const auto cost = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start);
  if (use_l2 && !binary.empty()) l2.store(binary, static_cast<std::uint64_t>(cost.count()), source.name);
  label_object(GL_PROGRAM, kernel->program, source.name);
  return kernel;
}

void GlDevice::release_program(GLuint program) {
  if (program == 0) return;
  worker_.post([this, program] {
    if (current_program_ == program) {  // a deleted program in use lingers; unbind it first
      glUseProgram(0);
      current_program_ = 0;
    }
    glDeleteProgram(program);
  });
}

}  // namespace vgpu::opengl
