// SPDX-License-Identifier: Apache-2.0
// tests/backends/opengl_shader_test.cpp — a complete Vulkan-flavoured GLSL shader (#version 450, an
// #extension with [[unroll]], set = 0, a push-constant block, a UBO, SSBOs, specialization
// constants at ids 0, 1, 2 and 9) and its SPIR-V run unchanged on OpenGL, by both of the
// backend's paths: SPIR-V through GL_ARB_gl_spirv + glSpecializeShader, and SPIRV-Cross GLSL
// (RuntimeOptions::gl_spirv = false, as VGPU_GL_SPIRV=0). A new specialization value costs a
// specialisation, never a front-end compile; a bad shader gives compile_error with the user's
// line. Part of vgpu-test-backends (llvmpipe in CI).
#include <chrono>
#include <cmath>
#include <mutex>
#include <string>
#include <unistd.h>
#include <vector>

#include "contract/contract.hpp"
#include "support/expect_error.hpp"
#include "vgpu/shader/shader_tools.hpp"

namespace vgpu_test::contract {
namespace {

// y[i] = x[i] * scale + sum(c[t % 4] for t < TAPS) + K0 + K1 * K2, for i < n.
const std::string kShader = R"(#version 450
#extension GL_EXT_control_flow_attributes : require
layout(local_size_x = 32) in;
layout(constant_id = 0) const uint K0 = 7;
layout(constant_id = 1) const int K1 = 8;
layout(constant_id = 2) const float K2 = 9.0;
layout(constant_id = 9) const uint TAPS = 4;
layout(push_constant) uniform Push { uint n; float scale; } pc;
layout(set = 0, binding = 0) readonly buffer In { float x[]; } inb;
layout(set = 0, binding = 1) writeonly buffer Out { float y[]; } outb;
layout(set = 0, binding = 2) uniform Coeffs { vec4 c; } coeffs;
void main() {
  const uint i = gl_GlobalInvocationID.x;
  if (i >= pc.n) return;
  float acc = 0.0;
  [[unroll]] for (uint t = 0; t < TAPS; ++t) acc += coeffs.c[t % 4];
  outb.y[i] = inb.x[i] * pc.scale + acc + float(K0) + float(K1) * K2;
}
)";

struct Push {
  std::uint32_t n;
  float scale;
};

/// The constants one run specialises (unset: the shader's defaults 7, 8, 9.0, 4).
struct Spec {
  std::uint32_t k0 = 7;
  std::int32_t k1 = 8;
  float k2 = 9.0f;
  std::uint32_t taps = 4;
};

/// text with a per-process comment (and tag) after #version, so no earlier run's L2 entry answers.
std::string fresh(const std::string& text, const std::string& tag = "") {
  static const std::string run =
      std::to_string(::getpid()) + "-" + std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
  const auto eol = text.find('\n');
  return text.substr(0, eol + 1) + "// run " + run + " " + tag + "\n" + text.substr(eol + 1);
}

vgpu::KernelSource with_bindings(vgpu::KernelSource s) {
  s.bindings = {{0, vgpu::Access::read, "x", {}}, {1, vgpu::Access::write, "y", {}}, {2, vgpu::Access::read, "c", {}}};
  s.params_size = sizeof(Push);
  return s;
}

vgpu::KernelSource shader_source(const std::string& name, const std::string& text) {
  vgpu::KernelSource s;
  s.name = name;
  s.add_glsl_shader(text);
  return with_bindings(std::move(s));
}

vgpu::CompileOptions spec_options(const Spec& spec, bool set) {
  vgpu::CompileOptions o;
  if (!set) return o;
  o.specialize(0, spec.k0).specialize(1, spec.k1).specialize(2, spec.k2).specialize("TAPS", spec.taps);
  return o;
}

/// Runs kernel on n elements and checks every result against the CPU formula.
void check_run(vgpu::Device& device, const vgpu::Kernel& kernel, const Spec& spec, std::uint32_t n) {
  std::vector<float> x(n), y(n, -1.0f);
  for (std::uint32_t i = 0; i < n; ++i) x[i] = static_cast<float>(i % 97) * 0.25f - 3.0f;
  const float c[4] = {0.5f, -1.0f, 2.0f, 0.25f};
  vgpu::Buffer bx = device.create_buffer(n * 4), by = device.create_buffer(n * 4), bc = device.create_buffer(16);
  device.write(bx, x.data(), n * 4);
  device.write(bc, c, 16);
  const Push push{n, 1.5f};
  device.dispatch(kernel, device.bind(kernel, {{0, bx}, {1, by}, {2, bc}}), vgpu::ParamsBlock::of(push),
                  vgpu::Groups{(n + 31) / 32, 1, 1});
  device.read(by, y.data(), n * 4);
  float acc = 0.0f;
  for (std::uint32_t t = 0; t < spec.taps; ++t) acc += c[t % 4];
  int wrong = 0;
  for (std::uint32_t i = 0; i < n; ++i) {
    const float want = x[i] * push.scale + acc + static_cast<float>(spec.k0) + static_cast<float>(spec.k1) * spec.k2;
    if (std::fabs(y[i] - want) > 1e-4f * (1.0f + std::fabs(want))) {
      if (wrong < 5) UNSCOPED_INFO("y[" << i << "] = " << y[i] << ", want " << want);
      ++wrong;
    }
  }
  CHECK(wrong == 0);
}

/// opengl:0 in a runtime of its own whose OpenGL devices take SPIR-V (spirv) or the
/// cross-compiled GLSL path, with the runtime's log lines. Thread-safety: the log sink appends
/// under mutex; read lines from the test's thread once its calls have returned.
struct GlRun {
  explicit GlRun(bool spirv) {
    vgpu::RuntimeOptions options = vgpu::RuntimeOptions::from_env();
    options.gl_spirv = spirv;
    options.log_level = vgpu::LogLevel::debug;
    options.log_sink = [this](vgpu::LogLevel, std::string_view line) {
      std::lock_guard lock(mutex);
      lines.emplace_back(line);
    };
    runtime = std::make_unique<vgpu::Runtime>(options);
    device = runtime->open("opengl:0");
  }
  GlRun(const GlRun&) = delete;
  GlRun& operator=(const GlRun&) = delete;
  /// Returns whether a log line so far contains what.
  bool logged(const std::string& what) {
    std::lock_guard lock(mutex);
    for (const std::string& l : lines)
      if (l.find(what) != std::string::npos) return true;
    return false;
  }
  std::mutex mutex;
  std::vector<std::string> lines;
  std::unique_ptr<vgpu::Runtime> runtime;
  vgpu::Device device;
};

bool has_feature(const vgpu::DeviceInfo& info, const std::string& f) {
  return std::find(info.features.begin(), info.features.end(), f) != info.features.end();
}

}  // namespace

BACKEND_CASE(opengl, "a complete Vulkan-flavoured shader runs unchanged by both paths (SPIR-V and SPIRV-Cross GLSL)",
             "[user][shader][spec]") {
  for (const bool spirv : {true, false}) {
    GlRun gl(spirv);
    vgpu::Device& device = gl.device;
    const bool path_a = spirv && has_feature(device.info(), "gl_spirv");
    INFO((path_a ? "path A: GL_ARB_gl_spirv" : "path B: SPIRV-Cross GLSL") << " on " << device.info().name);
    if (spirv && !path_a) WARN("the driver lacks GL_ARB_gl_spirv: only the cross-compiled path runs here");
    const vgpu::KernelSource source = shader_source("test.gl_shader", fresh(kShader, spirv ? "a" : "b"));
    // Defaults (the constants at ids 0..2 keep their own values: 7, 8, 9), then set values.
    check_run(device, device.compile(source, spec_options({}, false)), Spec{}, 1000);
    const Spec set{3, -2, 0.5f, 6};
    check_run(device, device.compile(source, spec_options(set, true)), set, 1000);
    check_run(device, device.compile(source, spec_options(set, true)), set, 33);
    CHECK(gl.logged(path_a ? "through GL_ARB_gl_spirv" : "cross-compiled by SPIRV-Cross"));
  }
}

BACKEND_CASE(opengl,
             "a capability outside OpenGL's SPIR-V environment (VulkanMemoryModel) never reaches the driver as SPIR-V",
             "[user][shader][capabilities]") {
  // llvmpipe died with SIGSEGV in glSpecializeShader on such a module: it must take path B.
  std::string text = kShader;
  text.insert(text.find('\n') + 1, "#pragma use_vulkan_memory_model\n");
  for (const bool spirv : {true, false}) {
    INFO((spirv ? "SPIR-V path where the driver has it" : "SPIRV-Cross path"));
    GlRun gl(spirv);
    vgpu::Device& device = gl.device;
    const vgpu::KernelSource source = shader_source("test.gl_vmm", fresh(text, spirv ? "a" : "b"));
    const Spec set{3, -2, 0.5f, 6};
    check_run(device, device.compile(source, spec_options(set, true)), set, 100);
    CHECK(gl.logged("cross-compiled by SPIRV-Cross"));
    CHECK_FALSE(gl.logged("through GL_ARB_gl_spirv"));
  }
}

BACKEND_CASE(opengl, "SPIR-V compiled by the shader layer runs through dialect spirv, by both paths",
             "[user][shader][spirv]") {
  const std::vector<std::uint32_t> words =
      vgpu::shader::compile_glsl_shader(fresh(kShader), {}, vgpu::shader::TargetEnv::vulkan1_1, "test.gl_spirv");
  for (const bool spirv : {true, false}) {
    INFO((spirv ? "SPIR-V path where the driver has it" : "SPIRV-Cross path"));
    GlRun gl(spirv);
    vgpu::Device& device = gl.device;
    vgpu::KernelSource source;
    source.name = "test.gl_spirv";
    source.add_spirv(words);
    source = with_bindings(std::move(source));
    const vgpu::CounterSnapshot before = device.counters();
    check_run(device, device.compile(source, spec_options({}, false)), Spec{}, 500);
    const Spec set{1, 3, -1.0f, 2};
    check_run(device, device.compile(source, spec_options(set, true)), set, 500);
    const vgpu::CounterSnapshot d = device.counters() - before;
    CHECK(d.source_compiles == 0);  // SPIR-V has no front end to run
    CHECK(d.pipeline_builds + d.l2_hits == 2);
  }
}

BACKEND_CASE(opengl, "three specialization values of one shader: one source compile, three specialisations",
             "[user][shader][spec][counters]") {
  for (const bool spirv : {true, false}) {
    GlRun gl(spirv);
    vgpu::Device& device = gl.device;
    INFO((spirv ? "SPIR-V path where the driver has it" : "SPIRV-Cross path"));
    const vgpu::KernelSource source = shader_source("test.gl_spec_count", fresh(kShader, spirv ? "a" : "b"));
    const vgpu::CounterSnapshot before = device.counters();
    const std::vector<Spec> values = {{1, 1, 1.0f, 1}, {2, -4, 0.25f, 3}, {5, 2, 2.0f, 8}};
    for (const Spec& s : values) check_run(device, device.compile(source, spec_options(s, true)), s, 100);
    const vgpu::CounterSnapshot d = device.counters() - before;
    INFO(d.to_string());
    CHECK(d.source_compiles == 1);
    CHECK(d.pipeline_builds == 3);
    CHECK(d.compiles == 3);
  }
}

BACKEND_CASE(opengl, "a complete shader in a fresh runtime: its SPIR-V and program binary come from L2, no front end",
             "[user][shader][l2]") {
  // Path B: Mesa keeps no binaries of SPIR-V programs (path A), see gl_program.cpp.
  const vgpu::KernelSource source = shader_source("test.gl_shader_l2", fresh(kShader, "l2"));
  const Spec set{4, 5, 0.5f, 3};
  for (int run = 0; run < 2; ++run) {
    INFO("runtime " << run);
    GlRun gl(false);
    vgpu::Device& device = gl.device;
    const bool binaries = has_feature(device.info(), "program_binary");
    const vgpu::CounterSnapshot before = device.counters();
    check_run(device, device.compile(source, spec_options(set, true)), set, 200);
    const vgpu::CounterSnapshot d = device.counters() - before;
    INFO(d.to_string());
    if (run == 0) {
      CHECK(d.source_compiles == 1);
      CHECK(d.pipeline_builds == 1);
      CHECK(d.l2_writes == (binaries ? 2u : 1u));  // the SPIR-V, and the program binary
    } else {
      CHECK(d.source_compiles == 0);
      CHECK(d.l2_hits == (binaries ? 2u : 1u));
      CHECK(d.pipeline_builds == (binaries ? 0u : 1u));
    }
  }
}

BACKEND_CASE(opengl, "GL forms: the push-constant rewrite validates, keeps std430 offsets, refuses a taken binding",
             "[shader][spirv]") {
  namespace sh = vgpu::shader;
  const std::vector<std::uint32_t> words =
      sh::compile_glsl_shader(kShader, {}, sh::TargetEnv::vulkan1_1, "test.gl_forms");
  const std::vector<std::uint32_t> gl = sh::push_constants_to_storage_buffer(words, 7);
  // Still valid SPIR-V, and what it declares: the params block a read-only storage buffer at 7.
  const std::string_view bytes(reinterpret_cast<const char*>(gl.data()), gl.size() * 4);
  const vgpu::KernelReflection r =
      sh::reflect(sh::spirv_words(bytes, sh::TargetEnv::vulkan1_1, "test.gl_forms"), "main", "test.gl_forms");
  CHECK(r.push_constant_bytes == 0);
  REQUIRE(r.bindings.size() == 4);
  const vgpu::ReflectedBinding& params = r.bindings.back();
  CHECK(params.binding == 7);
  CHECK(params.set == 0);
  CHECK(params.kind == vgpu::ResourceKind::storage_buffer);
  CHECK(params.access == vgpu::Access::read);
  CHECK(params.fixed_bytes == sizeof(Push));
  // The cross-compiled text bakes the values in.
  const std::vector<sh::SpecEntry> spec = {{0, 41u}, {9, 3u}};
  const std::string text = sh::to_opengl_glsl(gl, "main", spec, 430, "test.gl_forms");
  CHECK_THAT(text, Catch::Matchers::StartsWith("#version 430"));
  CHECK_THAT(text, Catch::Matchers::ContainsSubstring("41u"));
  CHECK_THAT(text, Catch::Matchers::ContainsSubstring("binding = 7"));
  CHECK_THAT(text, Catch::Matchers::ContainsSubstring("readonly buffer Push"));
  // A shader buffer at the params binding cannot be remapped silently.
  REQUIRE_VGPU_ERROR(invalid_argument, "binding 1", sh::push_constants_to_storage_buffer(words, 1));
}

BACKEND_CASE(opengl, "a complete shader that does not compile: compile_error with the user's own line number",
             "[user][shader][errors]") {
  vgpu::Device device = open_device(backend);
  // Line 6 uses an undeclared name; a Fix hint follows the log; the device keeps working.
  const std::string bad =
      "#version 450\n"
      "layout(local_size_x = 32) in;\n"
      "layout(set = 0, binding = 0) buffer Data { float v[]; } data;\n"
      "void main() {\n"
      "  const uint i = gl_GlobalInvocationID.x;\n"
      "  data.v[i] = undeclared_thing * 2.0;\n"
      "}\n";
  vgpu::KernelSource source;
  source.name = "test.gl_bad_shader";
  source.add_glsl_shader(bad);
  source.bindings = {{0, vgpu::Access::read_write, "v", {}}};
  const auto err = catch_error([&] { (void)device.compile(source, {}); });
  REQUIRE(err.has_value());
  INFO(err->what());
  CHECK(err->category() == vgpu::ErrorCategory::compile_error);
  CHECK_THAT(err->problem(), Catch::Matchers::ContainsSubstring("test.gl_bad_shader:6:"));
  CHECK_THAT(err->problem(), Catch::Matchers::ContainsSubstring("undeclared_thing"));
  CHECK_FALSE(err->fix().empty());
  check_run(device, device.compile(shader_source("test.gl_after_bad", fresh(kShader)), {}), Spec{}, 64);
}

}  // namespace vgpu_test::contract
