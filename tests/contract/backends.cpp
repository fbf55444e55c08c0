// SPDX-License-Identifier: Apache-2.0
// tests/contract/backends.cpp — the per-backend traits of the contract suite (contract.hpp says
// what each field means). A new backend adds one function here and one line in backends().
#include <cstring>
#include <string>
#include <vector>

#include "contract/contract.hpp"
#include "support/kernel_sources.hpp"
#include "support/scale_add_kernel.hpp"

namespace vgpu_test::contract {
namespace {

vgpu::DeviceLimits limits(std::array<std::uint32_t, 3> size, std::uint32_t invocations,
                          std::array<std::uint32_t, 3> count, std::uint64_t shared, std::uint64_t buffer,
                          std::uint32_t bindings) {
  vgpu::DeviceLimits l;
  l.max_workgroup_size = size;
  l.max_workgroup_invocations = invocations;
  l.max_workgroup_count = count;
  l.max_shared_memory_bytes = shared;
  l.max_buffer_bytes = buffer;
  l.max_bindings = bindings;
  return l;
}

/// Returns traits with only kind and name set.
Backend named(vgpu::BackendKind kind) {
  Backend b;
  b.kind = kind;
  b.name = std::string(vgpu::to_string(kind));
  return b;
}

/// What every device must offer (the built-ins use up to 3 slots).
vgpu::DeviceLimits any_device() { return limits({1, 1, 1}, 1, {1, 1, 1}, 0, 0, 4); }

/// xorshift32 noise, the same on every platform.
Bytes noise(std::size_t n, std::uint32_t state) {
  Bytes b(n);
  for (auto& byte : b) {
    state ^= state << 13, state ^= state >> 17, state ^= state << 5;
    byte = static_cast<std::uint8_t>(state);
  }
  return b;
}

/// The two broken GLSL kernels of both GLSL backends, named prefix.undeclared / prefix.syntax:
/// an undeclared variable on the body's line 4, and a syntax error on line 1.
/// undeclared_fragments and syntax_fragments say what the backend's message must contain.
std::vector<BadSource> glsl_bad_sources(vgpu::BackendKind kind, const std::string& prefix,
                                        std::vector<std::vector<std::string>> undeclared_fragments,
                                        std::vector<std::vector<std::string>> syntax_fragments) {
  vgpu::KernelSource undeclared = scale_add_source(kind,
                                                   "VGPU_PARAMS { uint n; float scale; uint pad0; uint pad1; } p;\n"
                                                   "layout(std430, binding = 0) buffer Buf { float v[]; };\n"
                                                   "void main() {\n"
                                                   "  v[0] = p.scale * no_such_variable;\n"
                                                   "}\n");
  undeclared.name = prefix + "_undeclared";
  undeclared.bindings.resize(1);
  vgpu::KernelSource syntax = scale_add_source(kind, "void main() { int x = ; }\n");
  syntax.name = prefix + "_syntax";
  syntax.bindings.clear();
  syntax.params_size = 0;
  return {{"an undeclared variable on line 4", undeclared, std::move(undeclared_fragments)},
          {"a syntax error on line 1", syntax, std::move(syntax_fragments)}};
}

Backend cpu() {
  Backend b = named(vgpu::BackendKind::cpu);
  b.l1_keeps_user_kernels = false;
  b.cpu_device = true;
  b.api_prefix = "C++";
  b.reports_memory = true;
  b.reports_compute_units = true;
  b.min_limits = any_device();
  b.fingerprint_fields = [](const vgpu::DeviceInfo&) { return std::vector<std::string>{"isa="}; };
  return b;
}

Backend vulkan() {
  Backend b = named(vgpu::BackendKind::vulkan);
  b.compiles_source = true;
  b.bad_sources = [] {
    return glsl_bad_sources(
        vgpu::BackendKind::vulkan, "test.vk",
        {{"GLSL kernel 'test.vk_undeclared' failed to compile:\n"}, {"no_such_variable"}, {"test.vk_undeclared:4:"}},
        {{"GLSL kernel 'test.vk_syntax' failed to compile:\n"}, {"test.vk_syntax:1:"}, {"syntax error"}});
  };
  b.l2 = vgpu::cache::EntryKind::spirv;
  b.l2_extra_writes = true;                        // the device's pipeline cache
  b.l2_payload_prefix = {0x03, 0x02, 0x23, 0x07};  // the SPIR-V magic, little-endian
  b.invalid_payloads = [] {
    const std::string text = "this is not SPIR-V, just 40 bytes of text";
    // Found before payloads were validated: vkCreateShaderModule took this (lavapipe does not
    // validate SPIR-V) and the pipeline build failed in every later process.
    std::vector<std::uint32_t> words(64);
    std::uint32_t state = 88172645u;
    for (auto& w : words) state ^= state << 13, state ^= state >> 17, state ^= state << 5, w = state;
    words[0] = 0x07230203;  // the SPIR-V magic
    Bytes magic_then_noise(words.size() * 4);
    std::memcpy(magic_then_noise.data(), words.data(), magic_then_noise.size());
    return std::vector<Payload>{{"40 bytes of text, not SPIR-V", Bytes(text.begin(), text.begin() + 40)},
                                {"the SPIR-V magic, then 63 random words", magic_then_noise}};
  };
  b.api_prefix = "Vulkan 1.";
  b.reports_memory = true;
  b.min_limits = limits({1, 1, 1}, 128, {65535, 1, 1}, 16384, 1u << 27, 4);  // Vulkan's required minimums
  b.fingerprint_fields = [](const vgpu::DeviceInfo&) { return std::vector<std::string>{"pipeline_cache_uuid="}; };
  return b;
}

Backend opengl() {
  Backend b = named(vgpu::BackendKind::opengl);
  b.compiles_source = true;
  // The log numbers the body's lines ("#line 1" after the prelude): Mesa "0:4(..)", NVIDIA "0(4)".
  b.bad_sources = [] {
    return glsl_bad_sources(
        vgpu::BackendKind::opengl, "test.gl",
        {{"GLSL kernel 'test.gl_undeclared' failed to compile:\n"}, {"no_such_variable"}, {"0:4(", "0(4)"}},
        {{"GLSL kernel 'test.gl_syntax' failed to compile:\n"}, {"0:1(", "0(1)"}});
  };
  b.l2 = vgpu::cache::EntryKind::gl_program_binary;
  b.child_mesa_cache = true;
  b.child_reports_binaries = true;
  b.why_no_l2 = [](const vgpu::DeviceInfo& info) -> std::string {
    for (const auto& f : info.features)
      if (f == "program_binary") return "";
    return "'" + info.name +
           "' offers no program binary formats (GL_NUM_PROGRAM_BINARY_FORMATS is 0; on Mesa, "
           "MESA_SHADER_CACHE_DISABLE=true does that), so OpenGL kernels skip L2";
  };
  b.invalid_payloads = [] { return std::vector<Payload>{{"a binary format word and nothing else", Bytes(4, 0x01)}}; };
  b.driver_refused = [](const Bytes& good) {
    // (1) the driver's own format, then noise: a well-formed entry the driver must refuse
    // (GL_LINK_STATUS false after glProgramBinary). (2) A format the driver does not offer.
    Bytes garbage = good;
    const Bytes tail = noise(good.size() - 4, 2463534242u);
    std::copy(tail.begin(), tail.end(), garbage.begin() + 4);
    Bytes foreign = good;
    const std::uint32_t bogus = 0x7eadbeef;
    std::memcpy(foreign.data(), &bogus, 4);
    return std::vector<Payload>{{"garbage binary", garbage}, {"foreign format", foreign}};
  };
  b.api_prefix = "OpenGL 4.";
  b.min_limits = limits({1024, 1, 1}, 1024, {65535, 65535, 65535}, 32768, 1u << 24, 7);  // GL 4.3 minimums
  b.max_bindings = 32;  // 8 SSBO bindings at least, the last one for params
  b.fingerprint_fields = [](const vgpu::DeviceInfo& info) {
    return std::vector<std::string>{"renderer=" + info.name, "binary_formats="};
  };
  b.one_feature_of = {"egl_device", "egl_surfaceless", "wgl"};
  return b;
}

Backend cuda() {
  Backend b = named(vgpu::BackendKind::cuda);
  b.compiles_source = true;
  b.bad_sources = [] {
    vgpu::KernelSource bad =
        scale_add_source(vgpu::BackendKind::cuda,
                         "extern \"C\" __global__ void scale_add(const float* a, const float* b, float* out) {\n"
                         "  out[0] = a[0] * no_such_variable;\n"
                         "}\n");
    bad.name = "test.cuda_bad";
    bad.params_size = 0;
    vgpu::KernelSource wrong_entry = scale_add_source(vgpu::BackendKind::cuda, kScaleAddCuda);
    set_cuda(wrong_entry, cuda_of(wrong_entry), "nope");
    return std::vector<BadSource>{
        {"an undeclared variable on line 2",
         bad,
         {{"CUDA kernel 'test.cuda_bad' failed to compile:"}, {"no_such_variable"}, {"test.cuda_bad.cu(2)"}}},
        {"an entry point the source does not define", wrong_entry, {{"no entry point 'nope'"}}, true}};
  };
  b.l2 = vgpu::cache::EntryKind::cuda_binary;
  b.l2_payload_prefix = {0x7f};  // an ELF cubin (NVRTC builds one for this device's SM)
  b.invalid_payloads = [] {
    const std::string text = "garbage, no terminator";  // neither a cubin nor NUL-terminated PTX
    return std::vector<Payload>{{"neither ELF nor NUL-terminated PTX", Bytes(text.begin(), text.end())}};
  };
  b.driver_refused = [](const Bytes&) {
    const std::string not_ptx = std::string("this is not PTX at all") + '\0';
    // Valid PTX the driver JIT-compiles, but its only kernel is not "scale_add" (once failed
    // compile() with "has no entry point" in every later process).
    const std::string other = std::string(
                                  ".version 7.0\n.target sm_75\n.address_size 64\n"
                                  ".visible .entry another_kernel()\n{\n  ret;\n}\n") +
                              '\0';
    return std::vector<Payload>{{"NUL-terminated text the driver takes for PTX", Bytes(not_ptx.begin(), not_ptx.end())},
                                {"a module without the kernel's entry point", Bytes(other.begin(), other.end())}};
  };
  b.api_prefix = "CUDA ";
  b.reports_memory = true;
  b.reports_compute_units = true;
  b.min_limits = limits({1, 1, 1}, 256, {1, 1, 1}, 0, 0, 4);
  b.fingerprint_fields = [](const vgpu::DeviceInfo&) {
    return std::vector<std::string>{"compute_capability=", "nvrtc_version=", "driver_version="};
  };
  return b;
}

}  // namespace

const std::vector<Backend>& backends() {
  static const std::vector<Backend> all = {cpu(), vulkan(), opengl(), cuda()};
  return all;
}

}  // namespace vgpu_test::contract
