// SPDX-License-Identifier: Apache-2.0
// tests/backends/vulkan_shader_test.cpp — user shaders on the Vulkan backend (issue 12): complete GLSL
// shaders and SPIR-V run as written (any set, UBOs, a push-constant block, their own local
// size), their specialization constants keep ids 0 and up (the body prelude's local size took
// ids 0..2 and silently overrode them), and a new specialization value costs a pipeline, never
// a front-end compile. Part of vgpu-test-backends (lavapipe in CI).
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "contract/contract.hpp"
#include "support/expect_error.hpp"
#include "vgpu/shader/shader_tools.hpp"

namespace vgpu_test::contract {
namespace {

/// Runs kernel once over buffers of the given uint contents (slot i = buffers[i]; empty: none),
/// with params and groups; returns every buffer's contents afterwards.
std::vector<std::vector<std::uint32_t>> run_uints(vgpu::Device& device, const vgpu::Kernel& kernel,
                                                  const std::vector<std::vector<std::uint32_t>>& contents,
                                                  const vgpu::ParamsBlock& params, vgpu::Groups groups) {
  std::vector<vgpu::Buffer> buffers;
  std::vector<vgpu::Binding> bindings;
  for (std::uint32_t slot = 0; slot < contents.size(); ++slot) {
    if (contents[slot].empty()) {
      buffers.emplace_back();
      continue;
    }
    buffers.push_back(device.create_buffer(contents[slot].size() * 4));
    device.write(buffers.back(), contents[slot].data(), contents[slot].size() * 4);
    bindings.push_back({slot, buffers.back()});
  }
  device.dispatch(kernel, device.bind(kernel, bindings), params, groups);
  std::vector<std::vector<std::uint32_t>> out(contents.size());
  for (std::uint32_t slot = 0; slot < contents.size(); ++slot) {
    if (contents[slot].empty()) continue;
    out[slot].resize(contents[slot].size());
    device.read(buffers[slot], out[slot].data(), out[slot].size() * 4);
  }
  return out;
}

vgpu::BindingDecl decl(std::uint32_t slot, vgpu::Access access) {
  return {slot, access, "b" + std::to_string(slot), {}};
}

/// A complete GLSL shader named name, with the given declared bindings.
vgpu::KernelSource shader_source(const char* name, const char* text, std::vector<vgpu::BindingDecl> bindings) {
  vgpu::KernelSource source;
  source.name = name;
  source.add_glsl_shader(text);
  source.bindings = std::move(bindings);
  return source;
}

/// Whether device lists feature in DeviceInfo::features.
bool has_feature(const vgpu::Device& device, const char* feature) {
  const auto& features = device.info().features;
  return std::find(features.begin(), features.end(), feature) != features.end();
}

// The issue's probe: constants at ids 0..2 with defaults 7, 8, 9, read back unchanged.
const char* const kProbeBody = R"(
layout(constant_id = 0) const uint A = 7;
layout(constant_id = 1) const uint B = 8;
layout(constant_id = 2) const uint C = 9;
layout(std430, binding = 0) writeonly buffer Out { uint v[]; } o;
void main() {
  if (gl_GlobalInvocationID.x == 0) { o.v[0] = A; o.v[1] = B; o.v[2] = C; o.v[3] = gl_WorkGroupSize.x; }
}
)";

const char* const kProbeShader = R"(#version 450
layout(constant_id = 0) const uint A = 7;
layout(constant_id = 1) const uint B = 8;
layout(constant_id = 2) const uint C = 9;
layout(local_size_x = 16) in;
layout(set = 0, binding = 0) writeonly buffer Out { uint v[]; } o;
void main() {
  if (gl_GlobalInvocationID.x == 0) { o.v[0] = A; o.v[1] = B; o.v[2] = C; o.v[3] = gl_WorkGroupSize.x; }
}
)";

BACKEND_CASE(vulkan, "specialization constants 0..2 keep their own values beside vgpu's local size",
             "[user][shader][spec]") {
  vgpu::Runtime runtime(vgpu::test::only(vgpu::BackendKind::vulkan));
  vgpu::Device device = runtime.open("vulkan:0");
  for (const bool complete : {false, true}) {
    INFO((complete ? "complete shader" : "body form"));
    vgpu::KernelSource source;
    source.name = complete ? "test.vk_spec_probe_shader" : "test.vk_spec_probe_body";
    if (complete)
      source.add_glsl_shader(kProbeShader);
    else
      source.add_glsl(kProbeBody);
    source.bindings = {decl(0, vgpu::Access::write)};
    vgpu::CompileOptions options;
    if (!complete) options.workgroup_size = {32, 1, 1};
    const vgpu::Kernel k = device.compile(source, options);
    auto out = run_uints(device, k, {{0, 0, 0, 0}}, {}, {1, 1, 1});
    CHECK(out[0] == std::vector<std::uint32_t>{7, 8, 9, complete ? 16u : 32u});
    // And given values: ids 0..2 take them, the local size stays vgpu's (body) or the shader's.
    options.specialize(0u, 70u).specialize(1u, 80u).specialize(2u, 90u);
    out = run_uints(device, device.compile(source, options), {{0, 0, 0, 0}}, {}, {1, 1, 1});
    CHECK(out[0] == std::vector<std::uint32_t>{70, 80, 90, complete ? 16u : 32u});
  }
}

BACKEND_CASE(vulkan, "a body form that declares a constant in vgpu's reserved ids is refused", "[user][shader][spec]") {
  vgpu::Runtime runtime(vgpu::test::only(vgpu::BackendKind::vulkan));
  vgpu::Device device = runtime.open("vulkan:0");
  vgpu::KernelSource source;
  source.name = "test.vk_reserved_body";
  source.add_glsl(
      "layout(constant_id = 2045) const uint X = 1;\n"
      "layout(std430, binding = 0) buffer B { uint v[]; } b;\nvoid main() { b.v[0] = X; }\n");
  source.bindings = {decl(0, vgpu::Access::read_write)};
  REQUIRE_VGPU_ERROR(invalid_argument, "2045", device.compile(source));
  vgpu::KernelSource shader;
  shader.name = "test.vk_reserved_shader";
  shader.add_glsl_shader(
      "#version 450\nlayout(constant_id = 2040) const uint X = 1;\nlayout(local_size_x = 1) in;\n"
      "layout(binding = 0) buffer B { uint v[]; } b;\nvoid main() { b.v[0] = X; }\n");
  shader.bindings = {decl(0, vgpu::Access::read_write)};
  REQUIRE_VGPU_ERROR(invalid_argument, "2040", device.compile(shader));
}

// A complete shader in the Vulkan style: its own #version and #extension, set 1, a UBO, a
// push-constant block, [[unroll]], constants by name, its own local size.
const char* const kFull = R"(#version 450
#extension GL_EXT_control_flow_attributes : require
layout(constant_id = 0) const uint REPEAT = 2;
layout(constant_id = 5) const uint ADD = 1;
layout(local_size_x = 8) in;
layout(set = 0, binding = 0) readonly buffer In { uint a[]; } src;
layout(set = 1, binding = 1) writeonly buffer Out { uint b[]; } dst;
layout(set = 0, binding = 2) uniform Scale { uint mul; } ubo;
layout(push_constant) uniform Push { uint count; uint offset; } pc;
void main() {
  uint i = gl_GlobalInvocationID.x;
  if (i >= pc.count) return;
  uint v = src.a[i];
  [[unroll]] for (uint r = 0; r < REPEAT; ++r) v = v * ubo.mul + ADD;
  dst.b[i] = v + pc.offset;
}
)";

struct Push {
  std::uint32_t count, offset;
};

std::vector<std::uint32_t> full_expected(std::uint32_t n, std::uint32_t repeat, std::uint32_t add, std::uint32_t mul,
                                         std::uint32_t offset) {
  std::vector<std::uint32_t> e(n);
  for (std::uint32_t i = 0; i < n; ++i) {
    std::uint32_t v = i * 3 + 1;
    for (std::uint32_t r = 0; r < repeat; ++r) v = v * mul + add;
    e[i] = v + offset;
  }
  return e;
}

vgpu::KernelSource full_source(const std::string& name, bool spirv) {
  vgpu::KernelSource s;
  s.name = name;
  if (spirv) {
    // What a user ships: SPIR-V compiled offline (glslc would write the same module).
    const auto words = vgpu::shader::compile_glsl_shader(kFull, {}, vgpu::shader::TargetEnv::vulkan1_1, name);
    s.add_spirv(words);
  } else {
    s.add_glsl_shader(kFull);
  }
  s.bindings = {decl(0, vgpu::Access::read), decl(1, vgpu::Access::write), decl(2, vgpu::Access::read)};
  s.params_size = sizeof(Push);
  return s;
}

void check_full(vgpu::Device& device, const vgpu::Kernel& k, std::uint32_t repeat, std::uint32_t add) {
  const std::uint32_t n = 37;
  std::vector<std::uint32_t> in(n);
  for (std::uint32_t i = 0; i < n; ++i) in[i] = i * 3 + 1;
  const auto out = run_uints(device, k, {in, std::vector<std::uint32_t>(n, 0xdead), {3, 0, 0, 0}},
                             vgpu::ParamsBlock::of(Push{n, 5}), {(n + 7) / 8, 1, 1});
  CHECK(out[1] == full_expected(n, repeat, add, 3, 5));
}

BACKEND_CASE(vulkan, "a complete shader and its SPIR-V run as written: sets, a UBO, push constants, its local size",
             "[user][shader][spirv]") {
  vgpu::Runtime runtime(vgpu::test::only(vgpu::BackendKind::vulkan));
  vgpu::Device device = runtime.open("vulkan:0");
  for (const bool spirv : {false, true}) {
    INFO((spirv ? "SPIR-V" : "complete GLSL"));
    const vgpu::KernelSource source = full_source(spirv ? "test.vk_full_spirv" : "test.vk_full_glsl", spirv);
    check_full(device, device.compile(source), 2, 1);
    vgpu::CompileOptions options;
    options.specialize("REPEAT", 3u).specialize(5u, 4u);
    check_full(device, device.compile(source, options), 3, 4);
    // A set workgroup size must match the shader's own.
    vgpu::CompileOptions wrong;
    wrong.workgroup_size = {64, 1, 1};
    REQUIRE_VGPU_ERROR(invalid_argument, "local size of 8x1x1", device.compile(source, wrong));
  }
}

BACKEND_CASE(vulkan, "three specialization values of one shader: one source compile, three pipelines",
             "[user][shader][spec][counters]") {
  vgpu::Runtime runtime(vgpu::test::only(vgpu::BackendKind::vulkan));
  vgpu::Device device = runtime.open("vulkan:0");
  // A text no earlier run compiled, so neither L2 nor this device's module cache has it.
  vgpu::KernelSource source = full_source("test.vk_spec_count", false);
  source.sources[0].code += "// " + std::to_string(std::random_device{}()) + "\n";
  const vgpu::CounterSnapshot before = device.counters();
  for (const std::uint32_t repeat : {1u, 2u, 4u}) {
    vgpu::CompileOptions options;
    options.specialize("REPEAT", repeat);
    check_full(device, device.compile(source, options), repeat, 1);
  }
  const vgpu::CounterSnapshot d = device.counters() - before;
  INFO(d.to_string());
  CHECK(d.source_compiles == 1);
  CHECK(d.pipeline_builds == 3);
  CHECK(d.compiles == 3);
  std::printf("vulkan_shader: 3 spec values of one shader: %llu source compile(s), %llu pipeline(s)\n",
              static_cast<unsigned long long>(d.source_compiles), static_cast<unsigned long long>(d.pipeline_builds));
}

BACKEND_CASE(vulkan, "bad SPIR-V bytes and a missing entry point are compile errors before the driver sees them",
             "[user][shader][spirv][errors]") {
  vgpu::Runtime runtime(vgpu::test::only(vgpu::BackendKind::vulkan));
  vgpu::Device device = runtime.open("vulkan:0");
  vgpu::KernelSource source = full_source("test.vk_bad_spirv", true);
  std::string& bytes = source.sources[0].code;
  bytes.resize(bytes.size() / 2 & ~std::size_t{3});
  REQUIRE_VGPU_ERROR(compile_error, "not valid SPIR-V", device.compile(source));
  vgpu::KernelSource other = full_source("test.vk_entry_spirv", true);
  other.sources[0].entry = "other";
  REQUIRE_VGPU_ERROR(compile_error, "no GLCompute entry point 'other'", device.compile(other));
}

}  // namespace
// Device features follow the shader: the Vulkan memory model (workgroup and device scope) and
// 16-bit storage are enabled on the device where supported (lavapipe has both), so these run
// as written, with no validation message (ctest runs them under VGPU_VULKAN_VALIDATION=1).
const char* const kMemoryModel = R"(#version 450
#pragma use_vulkan_memory_model
#extension GL_KHR_memory_scope_semantics : require
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) buffer Data { uint v[]; } d;
layout(set = 0, binding = 1) buffer Count { uint n; } c;
shared uint tile[64];
void main() {
  uint i = gl_LocalInvocationID.x;
  tile[i] = d.v[gl_GlobalInvocationID.x];
  controlBarrier(gl_ScopeWorkgroup, gl_ScopeWorkgroup, gl_StorageSemanticsShared, gl_SemanticsAcquireRelease);
  d.v[gl_GlobalInvocationID.x] = tile[63u - i] + 1u;
  atomicAdd(c.n, 1u, gl_ScopeDevice, gl_StorageSemanticsBuffer, gl_SemanticsRelaxed);
}
)";

BACKEND_CASE(vulkan, "a shader under the Vulkan memory model pragma runs as written", "[user][shader][features]") {
  vgpu::Runtime runtime(vgpu::test::only(vgpu::BackendKind::vulkan));
  vgpu::Device device = runtime.open("vulkan:0");
  if (!has_feature(device, "vulkan_memory_model_device_scope")) {
    skip("vulkan:0 lacks the vulkanMemoryModelDeviceScope feature");
    return;
  }
  const vgpu::Kernel k = device.compile(shader_source(
      "test.vk_memory_model", kMemoryModel, {decl(0, vgpu::Access::read_write), decl(1, vgpu::Access::read_write)}));
  std::vector<std::uint32_t> data(128);
  for (std::uint32_t i = 0; i < data.size(); ++i) data[i] = i * 5;
  const auto out = run_uints(device, k, {data, {0}}, {}, {2, 1, 1});
  for (std::uint32_t i = 0; i < data.size(); ++i) {
    INFO("element " << i);
    CHECK(out[0][i] == data[(i / 64) * 64 + 63 - i % 64] + 1);
  }
  CHECK(out[1][0] == 128u);
}

const char* const kHalfStorage = R"(#version 450
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
layout(local_size_x = 4) in;
layout(set = 0, binding = 0) readonly buffer In { float16_t a[]; } src;
layout(set = 0, binding = 1) writeonly buffer Out { float16_t b[]; } dst;
void main() {
  uint i = gl_GlobalInvocationID.x;
  dst.b[i] = src.a[i] * float16_t(2.0) + float16_t(1.0);
}
)";

BACKEND_CASE(vulkan, "a float16-storage shader runs as written", "[user][shader][features]") {
  vgpu::Runtime runtime(vgpu::test::only(vgpu::BackendKind::vulkan));
  vgpu::Device device = runtime.open("vulkan:0");
  for (const char* needed : {"storage_buffer_16bit", "shader_float16"})
    if (!has_feature(device, needed)) {
      skip(std::string("vulkan:0 lacks ") + needed);
      return;
    }
  const vgpu::Kernel k = device.compile(
      shader_source("test.vk_half_storage", kHalfStorage, {decl(0, vgpu::Access::read), decl(1, vgpu::Access::write)}));
  // Halves, two to a word (element 0 in the low half): 1.5, -2, 0.25, 3 → 4, -3, 1.5, 7.
  const auto out = run_uints(device, k, {{0xC0003E00u, 0x42003400u}, {0, 0}}, {}, {1, 1, 1});
  CHECK(out[1] == std::vector<std::uint32_t>{0xC2004400u, 0x47003E00u});
}

// A capability the device lacks is refused at compile, naming it, before any module exists.
// lavapipe has no clustered subgroup operations; a device that has them runs the shader.
const char* const kClustered = R"(#version 450
#extension GL_KHR_shader_subgroup_clustered : require
layout(local_size_x = 4) in;
layout(set = 0, binding = 0) buffer B { uint v[]; } b;
void main() { b.v[gl_LocalInvocationID.x] = subgroupClusteredAdd(b.v[gl_LocalInvocationID.x], 4); }
)";

BACKEND_CASE(vulkan, "a shader needing a capability the device lacks is refused naming it",
             "[user][shader][features]") {
  vgpu::Runtime runtime(vgpu::test::only(vgpu::BackendKind::vulkan));
  vgpu::Device device = runtime.open("vulkan:0");
  const vgpu::KernelSource source = shader_source("test.vk_clustered", kClustered, {decl(0, vgpu::Access::read_write)});
  if (!has_feature(device, "subgroup_clustered")) {
    REQUIRE_VGPU_ERROR(not_supported, "GroupNonUniformClustered", device.compile(source));
    // The device is intact: a shader within its features still runs.
    const vgpu::KernelSource fine =
        shader_source("test.vk_after_refusal", kProbeShader, {decl(0, vgpu::Access::write)});
    CHECK(run_uints(device, device.compile(fine), {{0, 0, 0, 0}}, {}, {1, 1, 1})[0] ==
          std::vector<std::uint32_t>{7, 8, 9, 16});
  } else {
    const auto out = run_uints(device, device.compile(source), {{1, 2, 3, 4}}, {}, {1, 1, 1});
    CHECK(out[0] == std::vector<std::uint32_t>{10, 10, 10, 10});
  }
}

}  // namespace vgpu_test::contract
