// SPDX-License-Identifier: Apache-2.0
// tests/backends/glsl_test.cpp — GLSL assembly, the embedded built-in kernels, the L3 precompiled SPIR-V
// table and (with Vulkan) the run-time GLSL compiler, including the OpenGL flavour of the text.
// The kernel files themselves are compiled into this test (tests/CMakeLists.txt embeds their
// bytes), so it reads no source path at run time and runs wherever its binary is copied.
#include "support/catch.hpp"

#include <array>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "vgpu/kernels/coopmat_tuning.hpp"
#include "vgpu/kernels/glsl_source.hpp"
#include "vgpu/kernels/gpu_tuning.hpp"
#include "support/expect_error.hpp"
#include "vgpu/cache/precompiled.hpp"

#if VGPU_WITH_VULKAN
#include <shaderc/shaderc.h>

#include "vgpu/shader/shader_tools.hpp"
#endif

namespace vgpu_test {
namespace {

using Defines = std::map<std::string, std::string>;
using vgpu::kernels::assemble_glsl;
using vgpu::kernels::builtin_glsl;
using vgpu::kernels::GlslTarget;

constexpr std::uint32_t kSpirvMagic = 0x07230203u;

struct Variant {
  const char* kernel;
  Defines defines;
};

// The variants cmake/VgpuGlsl.cmake precompiles (the ones core/runtime/kernel_cache/ops.cpp compiles).
// The defines of one tiled matmul variant (core/kernels/src/gpu_tuning.cpp's list).
std::map<std::string, std::string> mm(int bm, int bn, int bk, int tm, int tn) {
  return {{"VGPU_MM_BM", std::to_string(bm)},
          {"VGPU_MM_BN", std::to_string(bn)},
          {"VGPU_MM_BK", std::to_string(bk)},
          {"VGPU_MM_TM", std::to_string(tm)},
          {"VGPU_MM_TN", std::to_string(tn)}};
}

const std::vector<Variant>& builtin_variants() {
  static const std::vector<Variant> v = {{"matmul", {}},
                                         {"matmul", {{"VGPU_MM_NAIVE", "1"}}},
                                         {"matmul", mm(32, 32, 16, 4, 4)},
                                         {"matmul", mm(128, 64, 8, 8, 4)},
                                         {"matmul", mm(128, 128, 8, 8, 8)},
                                         {"matmul", mm(128, 128, 16, 8, 8)},
                                         {"matmul_splitk_reduce", {}},
                                         {"axpy", {}},
                                         {"reduce_sum", {}},
                                         {"softmax_rows", {}},
                                         {"softmax_rows", {{"VGPU_SOFTMAX_SPLIT", "1"}}},
                                         {"elementwise", {{"VGPU_OP", "0"}}},
                                         {"elementwise", {{"VGPU_OP", "1"}}},
                                         {"convert", {{"VGPU_CONVERT_NARROW", "0"}}},
                                         {"convert", {{"VGPU_CONVERT_NARROW", "1"}}}};
  static const std::vector<Variant> all = [] {
    std::vector<Variant> out = v;
    // The Vulkan cooperative-matrix matmul: every tiling its tuner offers.
    for (const auto& t : vgpu::kernels::glsl_coopmat_tilings())
      out.push_back({"matmul_coopmat", t.tuning().options.defines});
    return out;
  }();
  return all;
}

// core/kernels/glsl/* as the build saw them, byte for byte (cmake/VgpuEmbedBinary.cmake: a
// byte list, another route than the raw strings libvgpu embeds them as).
const unsigned char kPreludeFile[] = {
#include "glsl-files/prelude.glsl.inc"
};
const unsigned char kMatmulFile[] = {
#include "glsl-files/matmul.comp.inc"
};
const unsigned char kMatmulSplitkReduceFile[] = {
#include "glsl-files/matmul_splitk_reduce.comp.inc"
};
const unsigned char kAxpyFile[] = {
#include "glsl-files/axpy.comp.inc"
};
const unsigned char kElementwiseFile[] = {
#include "glsl-files/elementwise.comp.inc"
};
const unsigned char kReduceSumFile[] = {
#include "glsl-files/reduce_sum.comp.inc"
};
const unsigned char kSoftmaxRowsFile[] = {
#include "glsl-files/softmax_rows.comp.inc"
};
const unsigned char kConvertFile[] = {
#include "glsl-files/convert.comp.inc"
};

/// Returns the embedded file as text.
std::string text_of(std::span<const unsigned char> bytes) { return std::string(bytes.begin(), bytes.end()); }

const std::string kBody = "VGPU_PARAMS { uint n; uint pad0; uint pad1; uint pad2; } p;\nvoid main() {}\n";

}  // namespace

TEST_CASE("assemble_glsl: version, defines, prelude, #line 1, then the body", "[glsl]") {
  const std::string text =
      assemble_glsl(kBody, {{"B_DEF", "2"}, {"A_DEF", "x + 1"}, {"FLAG", ""}}, {64, 1, 1}, GlslTarget::vulkan, 0);
  INFO(text);
  REQUIRE(text.starts_with("#version 450\n"));
  // Defines follow #version in name order, then the prelude, then "#line 1" and the body.
  const auto a = text.find("\n#define A_DEF x + 1\n");
  const auto b = text.find("\n#define B_DEF 2\n");
  const auto flag = text.find("\n#define FLAG\n");
  const auto prelude = text.find(vgpu::kernels::glsl_prelude());
  const auto line = text.find("\n#line 1\n");
  REQUIRE(a != std::string::npos);
  REQUIRE(b != std::string::npos);
  REQUIRE(flag != std::string::npos);
  REQUIRE(prelude != std::string::npos);
  REQUIRE(line != std::string::npos);
  CHECK(a < b);
  CHECK(b < prelude);
  CHECK(flag < prelude);
  CHECK(prelude < line);
  CHECK(text.ends_with("\n#line 1\n" + kBody));
  // Vulkan specialises the local size and uses push constants: no GL-only defines.
  CHECK(text.find("VGPU_LOCAL_SIZE_X ") == std::string::npos);
  CHECK(text.find("#define VGPU_PARAMS_BINDING") == std::string::npos);
}

TEST_CASE("assemble_glsl for OpenGL defines the local size and the params binding", "[glsl]") {
  const std::string text = assemble_glsl(kBody, {{"VGPU_OP", "1"}}, {16, 8, 2}, GlslTarget::opengl, 7);
  INFO(text);
  REQUIRE(text.starts_with("#version 450\n#define VGPU_OP 1\n"));
  const auto prelude = text.find(vgpu::kernels::glsl_prelude());
  REQUIRE(prelude != std::string::npos);
  for (const char* def : {"#define VGPU_LOCAL_SIZE_X 16\n", "#define VGPU_LOCAL_SIZE_Y 8\n",
                          "#define VGPU_LOCAL_SIZE_Z 2\n", "#define VGPU_PARAMS_BINDING 7\n"}) {
    const auto pos = text.find(def);
    CHECK(pos != std::string::npos);
    CHECK(pos < prelude);
  }
  CHECK(text.ends_with("\n#line 1\n" + kBody));
  // A body without a final newline still ends its last line.
  CHECK(assemble_glsl("void main() {}", {}, {1, 1, 1}, GlslTarget::opengl, 0).ends_with("\n#line 1\nvoid main() {}\n"));
}

TEST_CASE("assemble_glsl rejects bad defines, a zero workgroup size and a #version in the body", "[glsl]") {
  for (const char* name : {"", "1ABC", "A-B", "A B", "A=B", "\xc3\xa9t\xc3\xa9"}) {
    INFO("define name: '" << name << "'");
    REQUIRE_VGPU_ERROR(invalid_argument, "not an identifier",
                       assemble_glsl(kBody, {{name, "1"}}, {64, 1, 1}, GlslTarget::vulkan, 0));
  }
  // Reserved: GLSL's own, and the names vgpu's prelude and GL assembly define.
  for (const char* name : {"GL_FOO", "A__B", "__LINE__", "VULKAN", "defined", "VGPU_PARAMS", "VGPU_LINEAR_GROUP",
                           "VGPU_LOCAL_SIZE_X", "VGPU_PARAMS_BINDING"}) {
    INFO("define name: '" << name << "'");
    REQUIRE_VGPU_ERROR(invalid_argument, "reserved",
                       assemble_glsl(kBody, {{name, "1"}}, {64, 1, 1}, GlslTarget::opengl, 0));
  }
  REQUIRE_VGPU_ERROR(invalid_argument, "line break",
                     assemble_glsl(kBody, {{"X", "1\nvoid f() {}"}}, {64, 1, 1}, GlslTarget::vulkan, 0));
  REQUIRE_VGPU_ERROR(invalid_argument, "zero", assemble_glsl(kBody, {}, {64, 0, 1}, GlslTarget::opengl, 0));
  REQUIRE_VGPU_ERROR(invalid_argument, "#version",
                     assemble_glsl("  #  version 450\n" + kBody, {}, {64, 1, 1}, GlslTarget::vulkan, 0));
  // Names that merely contain a reserved word, and lower-case names, are fine.
  CHECK_NOTHROW(
      assemble_glsl(kBody, {{"MY_VULKAN", "1"}, {"tile_m", "64"}, {"_X9", ""}}, {64, 1, 1}, GlslTarget::vulkan, 0));
}

TEST_CASE("built-in GLSL kernels and the prelude are embedded byte for byte", "[glsl]") {
  const std::map<std::string, std::string> files = {{"matmul", text_of(kMatmulFile)},
                                                    {"matmul_splitk_reduce", text_of(kMatmulSplitkReduceFile)},
                                                    {"axpy", text_of(kAxpyFile)},
                                                    {"elementwise", text_of(kElementwiseFile)},
                                                    {"reduce_sum", text_of(kReduceSumFile)},
                                                    {"softmax_rows", text_of(kSoftmaxRowsFile)},
                                                    {"convert", text_of(kConvertFile)}};
  for (const auto& [name, file] : files) {
    INFO(name);
    REQUIRE(!file.empty());
    CHECK(builtin_glsl(name) == file);
  }
  CHECK(vgpu::kernels::glsl_prelude() == text_of(kPreludeFile));
  CHECK(builtin_glsl("prelude").empty());
  CHECK(builtin_glsl("matmul.comp").empty());
  CHECK(builtin_glsl("").empty());
}

#if VGPU_WITH_VULKAN

namespace {

bool valid_spirv(const std::vector<std::uint32_t>& words) { return words.size() > 5 && words[0] == kSpirvMagic; }

// The OpenGL flavour of a text through glslang (via the same shaderc): SPIR-V for GL 4.5
// leaves VULKAN undefined, so it takes the prelude's GL branch. Returns "" or the log.
std::string compile_for_opengl(const std::string& text, const std::string& name) {
  shaderc_compiler_t compiler = shaderc_compiler_initialize();
  shaderc_compile_options_t options = shaderc_compile_options_initialize();
  shaderc_compile_options_set_target_env(options, shaderc_target_env_opengl, shaderc_env_version_opengl_4_5);
  shaderc_compilation_result_t result = shaderc_compile_into_spv(compiler, text.data(), text.size(),
                                                                 shaderc_compute_shader, name.c_str(), "main", options);
  std::string log;
  if (shaderc_result_get_compilation_status(result) != shaderc_compilation_status_success)
    log = std::string("failed: ") + shaderc_result_get_error_message(result);
  shaderc_result_release(result);
  shaderc_compile_options_release(options);
  shaderc_compiler_release(compiler);
  return log;
}

}  // namespace

TEST_CASE("every built-in variant has precompiled SPIR-V, matched on exact body and defines", "[glsl][l3]") {
  CHECK(vgpu::cache::precompiled_spirv_count() == builtin_variants().size());
  for (const auto& v : builtin_variants()) {
    INFO(v.kernel << (v.defines.empty() ? "" : " " + v.defines.begin()->first + "=" + v.defines.begin()->second));
    const std::string body(builtin_glsl(v.kernel));
    const auto* spirv = vgpu::cache::find_precompiled_spirv(body, v.defines);
    REQUIRE(spirv != nullptr);
    CHECK(valid_spirv(*spirv));
    // The same lookup gives the same table entry.
    CHECK(vgpu::cache::find_precompiled_spirv(body, v.defines) == spirv);

    // A body that differs at all, or different defines, miss.
    CHECK(vgpu::cache::find_precompiled_spirv(body + " ", v.defines) == nullptr);
    CHECK(vgpu::cache::find_precompiled_spirv(body.substr(0, body.size() - 1), v.defines) == nullptr);
    std::string changed = body;
    changed[changed.size() / 2] = changed[changed.size() / 2] == 'x' ? 'y' : 'x';
    CHECK(vgpu::cache::find_precompiled_spirv(changed, v.defines) == nullptr);
    Defines extra = v.defines;
    extra.emplace("EXTRA", "1");  // (operator[] = "1" trips a false -Wrestrict in GCC 12)
    CHECK(vgpu::cache::find_precompiled_spirv(body, extra) == nullptr);
  }
  const std::string elementwise(builtin_glsl("elementwise"));
  CHECK(vgpu::cache::find_precompiled_spirv(elementwise, {}) == nullptr);
  CHECK(vgpu::cache::find_precompiled_spirv(elementwise, {{"VGPU_OP", "2"}}) == nullptr);
  CHECK(vgpu::cache::find_precompiled_spirv(elementwise, {{"VGPU_OP", "0 "}}) == nullptr);
  CHECK(vgpu::cache::find_precompiled_spirv(elementwise, {{"VGPU_OQ", "0"}}) == nullptr);
  // Add and mul are different programs.
  CHECK(*vgpu::cache::find_precompiled_spirv(elementwise, {{"VGPU_OP", "0"}}) !=
        *vgpu::cache::find_precompiled_spirv(elementwise, {{"VGPU_OP", "1"}}));
  CHECK(vgpu::cache::find_precompiled_spirv("", {}) == nullptr);
}

TEST_CASE("compile_glsl_body compiles every built-in variant to SPIR-V", "[glsl][compiler]") {
  for (const auto& v : builtin_variants()) {
    INFO(v.kernel);
    const std::string text = assemble_glsl(builtin_glsl(v.kernel), v.defines, {16, 16, 1}, GlslTarget::vulkan, 0);
    const auto spirv = vgpu::shader::compile_glsl_body(text, std::string("vgpu.") + v.kernel);
    CHECK(valid_spirv(spirv));
    CHECK(spirv[1] == 0x00010300u);  // Vulkan 1.1 gives SPIR-V 1.3
    // glslc and the linked shaderc normally come from one release and then agree word for
    // word, which shows L3 compiled the very text assemble_glsl gives; other versions may not.
    const auto* pre = vgpu::cache::find_precompiled_spirv(builtin_glsl(v.kernel), v.defines);
    REQUIRE(pre != nullptr);
    if (*pre != spirv)
      WARN(v.kernel << ": build-time SPIR-V differs from run-time SPIR-V (glslc vs shaderc versions?)");
  }
}

TEST_CASE("the OpenGL flavour of every built-in variant compiles too", "[glsl][compiler]") {
  for (const auto& v : builtin_variants()) {
    INFO(v.kernel);
    // Vulkan only: cooperative matrices have no OpenGL GLSL (the tuner offers it on Vulkan alone).
    if (std::string_view(v.kernel) == "matmul_coopmat") continue;
    for (const auto size : {std::array<std::uint32_t, 3>{16, 16, 1}, std::array<std::uint32_t, 3>{256, 1, 1}}) {
      const std::string text = assemble_glsl(builtin_glsl(v.kernel), v.defines, size, GlslTarget::opengl, 3);
      CHECK(compile_for_opengl(text, v.kernel) == "");
    }
  }
}

TEST_CASE("a GLSL error throws compile_error with the log and the body's line number", "[glsl][compiler]") {
  // The error is on the body's line 4; the prelude and defines above it must not shift that.
  const std::string body =
      "VGPU_PARAMS { uint n; uint pad0; uint pad1; uint pad2; } p;\n"
      "layout(std430, binding = 0) buffer Buf { float v[]; };\n"
      "void main() {\n"
      "  v[0] = undeclared_thing;\n"
      "}\n";
  const std::string text = assemble_glsl(body, {{"SOME_DEFINE", "1"}}, {64, 1, 1}, GlslTarget::vulkan, 0);
  REQUIRE_VGPU_ERROR(compile_error, "my.kernel:4: error:", vgpu::shader::compile_glsl_body(text, "my.kernel"));
  const auto e = catch_error([&] { vgpu::shader::compile_glsl_body(text, "my.kernel"); });
  REQUIRE(e.has_value());
  CHECK(e->problem().starts_with("GLSL kernel 'my.kernel' failed to compile:\n"));
  CHECK_THAT(e->problem(), Catch::Matchers::ContainsSubstring("undeclared_thing"));
  CHECK(e->fix().starts_with("fix the GLSL error at the line shown"));

  // The OpenGL flavour numbers lines the same way.
  const std::string gl = assemble_glsl(body, {}, {64, 1, 1}, GlslTarget::opengl, 1);
  CHECK_THAT(compile_for_opengl(gl, "my.kernel"), Catch::Matchers::ContainsSubstring("my.kernel:4: error:"));

  // A syntax error on line 1, and a missing main().
  REQUIRE_VGPU_ERROR(compile_error, "bad:1:",
                     vgpu::shader::compile_glsl_body(
                         assemble_glsl("void main() { int x = ; }\n", {}, {1, 1, 1}, GlslTarget::vulkan, 0), "bad"));
  REQUIRE_VGPU_ERROR(
      compile_error, "nomain",
      vgpu::shader::compile_glsl_body(assemble_glsl("void f() {}\n", {}, {1, 1, 1}, GlslTarget::vulkan, 0), "nomain"));
}

TEST_CASE("compile_glsl_body is safe from several threads at once", "[glsl][compiler]") {
  const std::string text = assemble_glsl(builtin_glsl("axpy"), {}, {64, 1, 1}, GlslTarget::vulkan, 0);
  const auto expected = vgpu::shader::compile_glsl_body(text, "axpy");
  constexpr int kThreads = 4;
  std::array<std::vector<std::uint32_t>, kThreads> results;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 3; ++i) results[t] = vgpu::shader::compile_glsl_body(text, "axpy");
    });
  for (auto& th : threads) th.join();
  for (const auto& r : results) CHECK(r == expected);
}

#else

TEST_CASE("without Vulkan the precompiled table is empty", "[glsl][l3]") {
  CHECK(vgpu::cache::precompiled_spirv_count() == 0);
  for (const auto& v : builtin_variants())
    CHECK(vgpu::cache::find_precompiled_spirv(builtin_glsl(v.kernel), v.defines) == nullptr);
}

#endif

TEST_CASE("the cooperative-matrix matmul is offered for float16 only, on Vulkan devices that advertise it",
          "[glsl][tuner]") {
  vgpu::DeviceInfo info;
  info.backend = vgpu::BackendKind::vulkan;
  info.type = vgpu::DeviceType::discrete_gpu;
  info.compute_units = 132;
  info.subgroup_size = 32;
  info.limits.max_shared_memory_bytes = 48 * 1024;
  info.limits.max_workgroup_invocations = 1024;
  const auto tuner = vgpu::kernels::gpu_builtin_tuner();
  auto cands = [&](vgpu::DType dtype, std::uint32_t n) {
    return tuner->candidates(vgpu::OpShape{"matmul", n, n, n, dtype}, info);
  };
  // Not advertised: the SIMT tilings, for every dtype.
  for (const auto& c : cands(vgpu::DType::f16, 4096)) CHECK_FALSE(c.native_dtype);
  info.features = {std::string(vgpu::kernels::kCoopMatrixFeature)};
  const auto half = cands(vgpu::DType::f16, 4096);
  REQUIRE(half.size() == vgpu::kernels::glsl_coopmat_tilings().size());
  CHECK(half.front().variant == "cm128x128x32w64x32");  // 1024 workgroups cover 132 units
  for (const auto& c : half) {
    CHECK(c.native_dtype);
    CHECK(c.feature == vgpu::kernels::kCoopMatrixFeature);
    REQUIRE(c.code);
    CHECK(c.code->code == vgpu::kernels::builtin_glsl("matmul_coopmat"));
    CHECK(c.options.workgroup_size[0] * c.options.workgroup_size[1] * c.options.workgroup_size[2] <= 256);
    CHECK(vgpu::kernels::glsl_coopmat_tiling(c.variant).tuning().options.defines == c.options.defines);
  }
  // At 256² the 128×128 grid (4 workgroups) leaves the GPU idle: the rule takes 64×64.
  CHECK(cands(vgpu::DType::f16, 256).front().variant == "cm64x64x32w32x32");
  for (vgpu::DType other : {vgpu::DType::f32, vgpu::DType::bf16})
    for (const auto& c : cands(other, 4096)) CHECK_FALSE(c.native_dtype);
  // The kernel lays out 32-wide subgroups; OpenGL never runs it.
  info.subgroup_size = 64;
  for (const auto& c : cands(vgpu::DType::f16, 4096)) CHECK_FALSE(c.native_dtype);
  info.subgroup_size = 32;
  info.backend = vgpu::BackendKind::opengl;
  for (const auto& c : cands(vgpu::DType::f16, 4096)) CHECK_FALSE(c.native_dtype);
  info.backend = vgpu::BackendKind::vulkan;
  // VGPU_MATMUL_TILING forces a cooperative-matrix tiling for float16 only; unknown "cm" names fail with a Fix.
  const auto forced = vgpu::kernels::gpu_builtin_tuner("cm64x64x32w32x32");
  CHECK(forced->tune(vgpu::OpShape{"matmul", 4096, 4096, 4096, vgpu::DType::f16}, info).variant == "cm64x64x32w32x32");
  CHECK_FALSE(forced->tune(vgpu::OpShape{"matmul", 4096, 4096, 4096}, info).native_dtype);
  REQUIRE_VGPU_ERROR(
      invalid_argument, "Fix:",
      vgpu::kernels::gpu_builtin_tuner("cm1x1")->tune(vgpu::OpShape{"matmul", 64, 64, 64, vgpu::DType::f16}, info));
  // A device whose shared memory holds none of them is refused with a Fix, not compiled.
  info.limits.max_shared_memory_bytes = 16 * 1024;
  REQUIRE_VGPU_ERROR(not_supported, "Fix:", tuner->tune(vgpu::OpShape{"matmul", 64, 64, 64, vgpu::DType::f16}, info));
}

}  // namespace vgpu_test
