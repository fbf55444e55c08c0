// SPDX-License-Identifier: Apache-2.0
// tests/contract/device_info_test.cpp — what a backend's devices report: their kind and id, a type
// (software for llvmpipe/lavapipe, never the CPU fallback's unless it is the CPU), names, the
// API version, limits at least the backend's minimums, and a fingerprint that is the same in
// two runtimes, hashes its text and names the facts that identify the device; two devices opened
// from two runtimes give a kernel the same key (what L2 sharing relies on) and both compute;
// and a loop limit (max_loop_iterations) that is what the device does to a long loop.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "contract/contract.hpp"
#include "support/cache_fixtures.hpp"
#include "support/scale_add_kernel.hpp"
#include "vgpu/cache/kernel_key.hpp"

namespace vgpu_test::contract {

CONTRACT_CASE("device info: type, limits, stable fingerprint, and two runtimes agree on a kernel's key", "[info]",
              every_backend) {
  vgpu::Runtime r1(vgpu::test::only(backend.kind)), r2(vgpu::test::only(backend.kind));
  const auto d1 = r1.devices(), d2 = r2.devices();
  REQUIRE(!d1.empty());
  REQUIRE(d1.size() == d2.size());
  for (std::size_t i = 0; i < d1.size(); ++i) {
    const vgpu::DeviceInfo& info = d1[i];
    INFO(info.id() << " '" << info.name << "' " << vgpu::to_string(info.type) << " " << info.driver_version);
    CHECK(info.backend == backend.kind);
    CHECK(info.id() == backend.name + ":" + std::to_string(i));
    if (info.name.find("llvmpipe") != std::string::npos) CHECK(info.type == vgpu::DeviceType::software);
    CHECK((info.type == vgpu::DeviceType::cpu) == backend.cpu_device);  // only the CPU fallback is a cpu
    CHECK(!info.name.empty());
    CHECK(!info.vendor.empty());
    CHECK(!info.driver_version.empty());
    CHECK_THAT(info.api_version, Catch::Matchers::StartsWith(backend.api_prefix));
    if (backend.reports_memory) CHECK(info.memory_bytes > 0);
    if (backend.reports_compute_units) CHECK(info.compute_units > 0);

    const vgpu::DeviceLimits& l = info.limits;
    const vgpu::DeviceLimits& min = backend.min_limits;
    for (int k = 0; k < 3; ++k) {
      INFO("dimension " << k);
      CHECK(l.max_workgroup_size[k] > 0);
      CHECK(l.max_workgroup_count[k] > 0);
      CHECK(l.max_workgroup_size[k] >= min.max_workgroup_size[k]);
      CHECK(l.max_workgroup_count[k] >= min.max_workgroup_count[k]);
    }
    CHECK(l.max_workgroup_invocations >= min.max_workgroup_invocations);
    CHECK(l.max_shared_memory_bytes >= min.max_shared_memory_bytes);
    CHECK(l.max_buffer_bytes >= min.max_buffer_bytes);
    CHECK(l.max_bindings >= min.max_bindings);
    CHECK(l.max_bindings <= backend.max_bindings);
    if (!backend.one_feature_of.empty()) {
      const auto has = [&](const std::string& f) {
        return std::find(info.features.begin(), info.features.end(), f) != info.features.end();
      };
      CHECK(std::count_if(backend.one_feature_of.begin(), backend.one_feature_of.end(), has) == 1);
    }

    // Identity (vgpu-probe's vendor/device id, UUIDs, subgroup size): hex UUIDs, the same in two
    // runtimes; Vulkan and CUDA always tell the vendor, device UUID and subgroup size; the CPU none.
    for (const std::string* uuid : {&info.device_uuid, &info.driver_uuid}) {
      INFO("uuid '" << *uuid << "'");
      CHECK(
          (uuid->empty() || (uuid->size() == 32 && uuid->find_first_not_of("0123456789abcdef") == std::string::npos)));
    }
    CHECK(info.device_uuid == d2[i].device_uuid);
    CHECK(info.vendor_id == d2[i].vendor_id);
    CHECK(info.device_id == d2[i].device_id);
    CHECK(info.subgroup_size == d2[i].subgroup_size);
    if (backend.kind == vgpu::BackendKind::vulkan || backend.kind == vgpu::BackendKind::cuda) {
      CHECK(info.vendor_id.has_value());
      CHECK(info.device_uuid.size() == 32);
      CHECK(info.subgroup_size.value_or(0) > 0);
    }
    if (backend.kind == vgpu::BackendKind::vulkan) CHECK(info.device_id.has_value());
    if (backend.cpu_device)
      CHECK((!info.vendor_id && !info.device_id && info.device_uuid.empty() && info.driver_uuid.empty() &&
             !info.subgroup_size));

    CHECK(info.fingerprint.text == d2[i].fingerprint.text);
    CHECK(info.fingerprint.hash == d2[i].fingerprint.hash);
    CHECK(info.fingerprint.hash == vgpu::cache::hash64(info.fingerprint.text));
    CHECK(info.fingerprint.hex().size() == 16);
    CHECK_THAT(info.fingerprint.text, Catch::Matchers::ContainsSubstring("backend=" + backend.name));
    CHECK_THAT(info.fingerprint.text, Catch::Matchers::ContainsSubstring("vgpu_cache_format="));
    for (const std::string& field : backend.fingerprint_fields(info))
      CHECK_THAT(info.fingerprint.text, Catch::Matchers::ContainsSubstring(field));
  }
  // Two opened devices (one per runtime, each with its own context) agree on keys.
  vgpu::Device a = r1.open(backend.name + ":0"), b = r2.open(backend.name + ":0");
  CHECK(a != b);
  CHECK(a.info().fingerprint.hash == b.info().fingerprint.hash);
  const vgpu::KernelSource source = scale_add_source(backend.kind, scale_add_text(backend.kind));
  const vgpu::Kernel ka = a.compile(source, scale_add_options());
  const vgpu::Kernel kb = b.compile(source, scale_add_options());
  CHECK(ka.key_hex() == kb.key_hex());
  CHECK(ka.key_hex() == scale_add_key(a.info()).hex());
  check_scale_add(a, ka, 100, 64);
  check_scale_add(b, kb, 100, 64);
}

namespace {

// One invocation counts the iterations of one loop of p.n (slot 0: word 0 the count, words 1..8
// ones the loop reads, so that no compiler folds the loop away): what a driver's loop limit does.
struct LoopParams {
  std::uint32_t n, pad0, pad1, pad2;
};

vgpu::KernelSource loop_count_source() {
  vgpu::KernelSource s;
  s.name = "contract.loop_count";
  s.params_size = sizeof(LoopParams);
  s.bindings = {{0, vgpu::Access::read_write, "words", {}}};
  s.add_glsl(R"(
VGPU_PARAMS { uint n; uint pad0; uint pad1; uint pad2; } p;
layout(std430, binding = 0) buffer Words { uint w[]; };
void main() {
  uint c = 0u;
  for (uint i = 0u; i < p.n; ++i) c += w[1u + (i & 7u)];
  w[0] = c;
}
)");
  s.add_cuda(R"(
struct LoopParams { unsigned n, pad0, pad1, pad2; };
extern "C" __global__ void loop_count(unsigned* w, LoopParams p) {
  unsigned c = 0u;
  for (unsigned i = 0u; i < p.n; ++i) c += w[1u + (i & 7u)];
  w[0] = c;
}
)",
             "loop_count");
  s.add_cpu([](const vgpu::CpuWorkgroup& wg) {
    auto* w = wg.buffer<std::uint32_t>(0);
    std::uint32_t c = 0;
    for (std::uint32_t i = 0; i < wg.params_as<LoopParams>().n; ++i) c += w[1 + (i & 7)];
    w[0] = c;
  });
  return s;
}

}  // namespace

CONTRACT_CASE("device info: max_loop_iterations is what the driver does to a long loop", "[info][loops]",
              every_backend) {
  vgpu::Runtime runtime(vgpu::test::only(backend.kind));
  for (const vgpu::DeviceInfo& info : runtime.devices()) {
    INFO(info.id() << " '" << info.name << "' max_loop_iterations " << info.limits.max_loop_iterations);
    const std::uint32_t limit = info.limits.max_loop_iterations;
    // Mesa's llvmpipe (OpenGL) and lavapipe (Vulkan, also named llvmpipe) cut loops at 65 535;
    // the CPU device runs plain C++, which has no such limit.
    if (info.name.find("llvmpipe") != std::string::npos) CHECK(limit == 65535);
    if (backend.cpu_device) CHECK(limit == 0);
    // What the device does: a loop past the limit stops exactly at it, and where the device
    // claims none, a loop past Mesa's runs to the end.
    vgpu::Device device = runtime.open(info);
    vgpu::CompileOptions one;
    one.workgroup_size = {1, 1, 1};
    const vgpu::Kernel k = device.compile(loop_count_source(), one);
    const std::uint32_t n = (limit ? limit : 65535) + 1000;
    std::vector<std::uint32_t> words{0xFFFFFFFFu, 1, 1, 1, 1, 1, 1, 1, 1};
    vgpu::Buffer buf = device.create_buffer(words.size() * 4);
    device.write(buf, words.data(), words.size() * 4);
    device.dispatch(k, device.bind(k, {{0, buf}}), vgpu::ParamsBlock::of(LoopParams{n, 0, 0, 0}), {1, 1, 1});
    device.read(buf, words.data(), words.size() * 4);
    CHECK(words[0] == (limit ? limit : n));
  }
}

}  // namespace vgpu_test::contract
