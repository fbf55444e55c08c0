// SPDX-License-Identifier: Apache-2.0
// tests/backends/shader_tools_test.cpp — the shader layer (core/shader): complete GLSL shaders compiled
// as written, SPIR-V checked, reflected and specialised.
#include "support/catch.hpp"

#include <cstring>
#include <string>

#include "support/expect_error.hpp"
#include "vgpu/shader/shader_tools.hpp"

namespace vgpu_test {
namespace {

using namespace vgpu;
using shader::TargetEnv;

// Every pattern reflection must see: two SSBOs (readonly, writeonly), a UBO, a push-constant
// block, constants at ids 0, 1, 2 and 7 (named), local_size_x_id and a fixed array sized by a
// constant, in set 0 and set 1.
const char* const kShader = R"(#version 450
#extension GL_EXT_control_flow_attributes : require
layout(constant_id = 0) const uint M = 7;
layout(constant_id = 1) const int N = 8;
layout(constant_id = 2) const float SCALE = 9.5;
layout(constant_id = 7) const bool FLAG = true;
layout(constant_id = 3) const uint WIDTH = 32;
layout(constant_id = 4) const uint TILE = 4;
layout(local_size_x_id = 3, local_size_y = 2) in;
layout(set = 0, binding = 0) readonly buffer In { float a[]; } src;
layout(set = 0, binding = 1) writeonly buffer Out { vec4 head; float b[]; } dst;
layout(set = 1, binding = 3) uniform Params { vec4 k; uint count; } ubo;
layout(set = 0, binding = 4) buffer Fixed { float tile[TILE]; } fixed_tile;
layout(push_constant) uniform Push { uint offset; float alpha; } pc;
void main() {
  uint i = gl_GlobalInvocationID.x;
  float acc = 0.0;
  [[unroll]] for (uint t = 0; t < TILE; ++t) acc += fixed_tile.tile[t];
  if (FLAG) dst.b[i] = src.a[i + pc.offset] * SCALE * pc.alpha + float(M) + float(N) + ubo.k.x + acc;
}
)";

std::vector<std::uint32_t> compiled(const char* text = kShader) {
  return shader::compile_glsl_shader(text, {}, TargetEnv::vulkan1_1, "test.shader");
}

std::string as_bytes(const std::vector<std::uint32_t>& words) {
  std::string b(words.size() * 4, '\0');
  std::memcpy(b.data(), words.data(), b.size());
  return b;
}

const ReflectedSpecConstant* constant(const KernelReflection& r, std::uint32_t id) {
  for (const auto& k : r.spec_constants)
    if (k.id == id) return &k;
  return nullptr;
}

TEST_CASE("reflect reads a complete shader's bindings, push constants, local size and constants", "[shader]") {
  const auto words = compiled();
  const KernelReflection r = shader::reflect(words, "main", "test.shader");
  REQUIRE(r.bindings.size() == 4);
  CHECK(r.bindings[0].binding == 0);
  CHECK(r.bindings[0].set == 0);
  CHECK(r.bindings[0].kind == ResourceKind::storage_buffer);
  CHECK(r.bindings[0].access == Access::read);
  CHECK(r.bindings[0].name == "src");
  CHECK(r.bindings[0].fixed_bytes == 0);
  CHECK(r.bindings[0].runtime_stride == 4);
  CHECK(r.bindings[1].binding == 1);
  CHECK(r.bindings[1].access == Access::write);
  CHECK(r.bindings[1].fixed_bytes == 16);
  CHECK(r.bindings[1].runtime_stride == 4);
  CHECK(r.bindings[2].binding == 3);
  CHECK(r.bindings[2].set == 1);
  CHECK(r.bindings[2].kind == ResourceKind::uniform_buffer);
  CHECK(r.bindings[2].access == Access::read);
  CHECK(r.bindings[2].fixed_bytes == 20);
  CHECK(r.bindings[3].binding == 4);
  CHECK(r.bindings[3].access == Access::read_write);
  CHECK(r.bindings[3].fixed_bytes == 16);  // float tile[TILE] at TILE's default 4
  CHECK(r.bindings[3].runtime_stride == 0);
  CHECK(r.push_constant_bytes == 8);
  // local_size_x_id = 3 is a constant of its own (default 1) beside WIDTH, which shares its id.
  CHECK(r.local_size == std::array<std::uint32_t, 3>{1, 2, 1});
  CHECK(r.local_size_ids[0] == std::optional<std::uint32_t>(3));
  CHECK(!r.local_size_ids[1]);
  CHECK(!r.local_size_ids[2]);

  REQUIRE(r.spec_constants.size() == 6);
  CHECK(constant(r, 0)->name == "M");
  CHECK(constant(r, 0)->default_value == SpecValue::of(7u));
  CHECK(constant(r, 1)->name == "N");
  CHECK(constant(r, 1)->default_value == SpecValue::of(8));
  CHECK(constant(r, 2)->name == "SCALE");
  CHECK(constant(r, 2)->default_value == SpecValue::of(9.5f));
  CHECK(constant(r, 7)->name == "FLAG");
  CHECK(constant(r, 7)->default_value == SpecValue::of(true));
  CHECK(constant(r, 3)->name == "WIDTH");
  CHECK(std::find(r.capabilities.begin(), r.capabilities.end(), "Shader") != r.capabilities.end());
}

TEST_CASE("reflect with specialization values reports the specialised sizes", "[shader]") {
  const auto words = compiled();
  const KernelReflection defaults = shader::reflect(words, "main", "test.shader");
  CompileOptions o;
  o.specialize("TILE", 8u).specialize(3u, 16u);
  std::array<std::uint32_t, 3> size{};
  const auto spec = shader::resolve_specialization(defaults, o, false, "test.shader", &size);
  CHECK(size == std::array<std::uint32_t, 3>{16, 2, 1});
  const KernelReflection r = shader::reflect(words, "main", "test.shader", spec);
  CHECK(r.bindings[3].fixed_bytes == 32);
  CHECK(r.local_size == std::array<std::uint32_t, 3>{16, 2, 1});
}

TEST_CASE("resolve_specialization takes constants by id and name and the shader's own local size", "[shader]") {
  const KernelReflection r = shader::reflect(compiled(), "main", "test.shader");
  CompileOptions o;
  o.specialize(0u, 11u).specialize("N", -3).specialize("SCALE", 0.25f).specialize(7u, false);
  std::array<std::uint32_t, 3> size{};
  const auto spec = shader::resolve_specialization(r, o, false, "test.shader", &size);
  CHECK(size == std::array<std::uint32_t, 3>{1, 2, 1});  // unset workgroup_size: the shader's own
  REQUIRE(spec.size() == 4);
  CHECK(spec[0].id == 0);
  CHECK(spec[0].bits == 11);
  CHECK(spec[1].id == 1);
  CHECK(spec[1].bits == static_cast<std::uint32_t>(-3));
  CHECK(spec[2].id == 2);
  CHECK(spec[2].bits == SpecValue::of(0.25f).bits);
  CHECK(spec[3].id == 7);
  CHECK(spec[3].bits == 0);

  SECTION("an int for a uint constant converts when not negative") {
    CompileOptions p;
    p.specialize("M", 5);
    CHECK(shader::resolve_specialization(r, p, false, "test.shader", &size)[0].bits == 5);
  }
  SECTION("a set workgroup size goes to the local_size_x_id constant and must match the fixed y") {
    CompileOptions p;
    p.workgroup_size = {64, 2, 1};
    const auto s = shader::resolve_specialization(r, p, false, "test.shader", &size);
    CHECK(size == std::array<std::uint32_t, 3>{64, 2, 1});
    REQUIRE(s.size() == 1);
    CHECK(s[0].id == 3);
    CHECK(s[0].bits == 64);
    p.workgroup_size = {64, 1, 1};
    REQUIRE_VGPU_ERROR(invalid_argument, "local size of 64x2x1",
                       shader::resolve_specialization(r, p, false, "test.shader", &size));
  }
}

TEST_CASE("resolve_specialization refuses unknown names, wrong types and reserved ids", "[shader]") {
  const KernelReflection r = shader::reflect(compiled(), "main", "test.shader");
  std::array<std::uint32_t, 3> size{};
  CompileOptions unknown;
  unknown.specialize("NOPE", 1u);
  REQUIRE_VGPU_ERROR(invalid_argument, "no specialization constant named 'NOPE'",
                     shader::resolve_specialization(r, unknown, false, "test.shader", &size));
  const auto e = catch_error([&] { shader::resolve_specialization(r, unknown, false, "test.shader", &size); });
  REQUIRE(e);
  CHECK_THAT(e->what(), Catch::Matchers::ContainsSubstring("1 'N' (int)"));
  CompileOptions unknown_id;
  unknown_id.specialize(9u, 1u);
  REQUIRE_VGPU_ERROR(invalid_argument, "no specialization constant with id 9",
                     shader::resolve_specialization(r, unknown_id, false, "test.shader", &size));
  CompileOptions wrong;
  wrong.specialize("M", 1.5f);
  REQUIRE_VGPU_ERROR(invalid_argument, "cannot take the float value",
                     shader::resolve_specialization(r, wrong, false, "test.shader", &size));
  CompileOptions negative;
  negative.specialize("M", -1);
  REQUIRE_VGPU_ERROR(invalid_argument, "cannot take the int value",
                     shader::resolve_specialization(r, negative, false, "test.shader", &size));
  CompileOptions reserved;
  reserved.specialize(2041u, 1u);
  REQUIRE_VGPU_ERROR(invalid_argument, "2040..2047",
                     shader::resolve_specialization(r, reserved, false, "test.shader", &size));

  const auto own = compiled(R"(#version 450
layout(constant_id = 2044) const uint MINE = 3;
layout(local_size_x = 1) in;
layout(binding = 0) buffer B { uint v[]; } b;
void main() { b.v[0] = MINE; }
)");
  const KernelReflection ro = shader::reflect(own, "main", "test.own");
  REQUIRE_VGPU_ERROR(invalid_argument, "constant_id below 2040",
                     shader::resolve_specialization(ro, CompileOptions{}, false, "test.own", &size));
  CHECK_NOTHROW(shader::resolve_specialization(ro, CompileOptions{}, true, "test.own", &size));
}

TEST_CASE("compile_glsl_shader reports errors at the user's own line numbers", "[shader]") {
  const char* const bad = "#version 450\nlayout(local_size_x = 1) in;\nvoid main() {\n  undeclared = 1;\n}\n";
  REQUIRE_VGPU_ERROR(compile_error,
                     "test.bad:4: error:", shader::compile_glsl_shader(bad, {}, TargetEnv::vulkan1_1, "test.bad"));
  // Defines arrive as -D: the shader's line numbers do not move.
  const char* const uses = "#version 450\nlayout(local_size_x = 1) in;\nvoid main() {\n  int x = VALUE;\n  y = 1;\n}\n";
  REQUIRE_VGPU_ERROR(compile_error, "test.bad:5: error:",
                     shader::compile_glsl_shader(uses, {{"VALUE", "3"}}, TargetEnv::vulkan1_1, "test.bad"));
  CHECK_NOTHROW(shader::compile_glsl_shader(
      "#version 450\n#pragma use_vulkan_memory_model\nlayout(local_size_x = 1) in;\nvoid main() {}\n", {},
      TargetEnv::vulkan1_1, "test.vmm"));
}

TEST_CASE("spirv_words validates the bytes of a SPIR-V module", "[shader]") {
  const auto words = compiled();
  CHECK(shader::spirv_words(as_bytes(words), TargetEnv::vulkan1_1, "test.spv") == words);
  REQUIRE_VGPU_ERROR(compile_error, "not a whole number",
                     shader::spirv_words(as_bytes(words).substr(0, 22), TargetEnv::vulkan1_1, "test.spv"));
  std::string bytes = as_bytes(words);
  bytes[0] = 0x11;
  REQUIRE_VGPU_ERROR(compile_error, "not the SPIR-V magic",
                     shader::spirv_words(bytes, TargetEnv::vulkan1_1, "test.spv"));
  // A truncated module (whole words, good magic) fails validation.
  std::vector<std::uint32_t> cut(words.begin(), words.begin() + static_cast<std::ptrdiff_t>(words.size() / 2));
  REQUIRE_VGPU_ERROR(compile_error, "is not valid SPIR-V for Vulkan 1.1",
                     shader::spirv_words(as_bytes(cut), TargetEnv::vulkan1_1, "test.spv"));
}

TEST_CASE("reflect names a missing entry point and unsupported resources", "[shader]") {
  const auto words = compiled();
  REQUIRE_VGPU_ERROR(compile_error, "no GLCompute entry point 'other' (it has: main)",
                     shader::reflect(words, "other", "test.shader"));
  const auto image = compiled(R"(#version 450
layout(local_size_x = 1) in;
layout(binding = 0, r32f) uniform image2D img;
void main() { imageStore(img, ivec2(0), vec4(1.0)); }
)");
  REQUIRE_VGPU_ERROR(not_supported, "storage image 'img'", shader::reflect(image, "main", "test.image"));
  const auto twice = compiled(R"(#version 450
layout(local_size_x = 1) in;
layout(set = 0, binding = 2) buffer A { uint a[]; } x;
layout(set = 1, binding = 2) buffer B { uint b[]; } y;
void main() { x.a[0] = y.b[0]; }
)");
  REQUIRE_VGPU_ERROR(invalid_argument, "binding 2 twice", shader::reflect(twice, "main", "test.twice"));
}

TEST_CASE("compile_glsl_body compiles an assembled body", "[shader]") {
  const auto words = shader::compile_glsl_body(
      "#version 450\nlayout(local_size_x = 1) in;\nlayout(binding = 0) buffer B { uint v[]; } b;\n"
      "void main() { b.v[0] = 1u; }\n",
      "test.body");
  CHECK(words.size() > 5);
  CHECK(words[0] == 0x07230203u);
}

}  // namespace
TEST_CASE("reflect reads the interface of a module with cooperative matrices (types SPIRV-Cross 2021 lacks)",
          "[shader]") {
  // As a third-party shader would write it: cooperative matrices loaded from and stored to
  // buffers, a constant matrix, an array of them, a helper function taking one.
  const char* const coop = R"(#version 450
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_shader_16bit_storage : require
layout(local_size_x_id = 5) in;
layout(constant_id = 6) const uint STRIDE = 16;
layout(set = 0, binding = 0) readonly buffer A { float16_t a[]; };
layout(set = 0, binding = 2) writeonly buffer C { float c[]; };
layout(push_constant) uniform Push { uint offset; uint pad; } pc;
fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> twice(fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> m) { return m + m; }
void main() {
  fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> x[2];
  coopMatLoadNV(x[0], a, pc.offset, STRIDE, false);
  coopMatLoadNV(x[1], a, pc.offset, STRIDE, true);
  fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> acc = fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>(1.0);
  acc = coopMatMulAddNV(x[0], x[1], acc);
  coopMatStoreNV(twice(acc), c, 0, STRIDE, false);
}
)";
  const auto words = shader::compile_glsl_shader(coop, {}, TargetEnv::vulkan1_1, "test.coop");
  const KernelReflection r = shader::reflect(words, "main", "test.coop");
  REQUIRE(r.bindings.size() == 2);
  CHECK(r.bindings[0].binding == 0);
  CHECK(r.bindings[0].access == Access::read);
  CHECK(r.bindings[1].binding == 2);
  CHECK(r.bindings[1].access == Access::write);
  CHECK(r.push_constant_bytes == 8);
  CHECK(r.bindings[0].runtime_stride == 2);
  CHECK(r.local_size_ids[0] == std::optional<std::uint32_t>(5));
  REQUIRE(constant(r, 6) != nullptr);
  CHECK(constant(r, 6)->name == "STRIDE");
  CHECK(constant(r, 6)->default_value == SpecValue::of(16u));
  CHECK(std::find(r.capabilities.begin(), r.capabilities.end(), "CooperativeMatrixNV") != r.capabilities.end());
  CHECK(std::find(r.capabilities.begin(), r.capabilities.end(), "Float16") != r.capabilities.end());
}

}  // namespace vgpu_test
