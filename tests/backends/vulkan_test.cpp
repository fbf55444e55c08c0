// SPDX-License-Identifier: Apache-2.0
// tests/backends/vulkan_test.cpp — what only the Vulkan backend does, beyond the backend contract
// (tests/contract/, which runs the user-kernel, L2, steady-state, batch, thread and device-info
// themes on Vulkan too): the built-ins' embedded SPIR-V (L3), and the device's VkPipelineCache
// entry in L2 (its 32-byte header checked before the driver sees it and the rejection counted,
// a damaged body survived). Part of vgpu-test-backends (lavapipe in CI, so sizes stay small).
#include <set>
#include <string>
#include <vector>

#include "contract/contract.hpp"
#include "support/cache_fixtures.hpp"
#include "support/numerics.hpp"
#include "support/plan_runner.hpp"
#include "support/scale_add_kernel.hpp"
#include "support/tuned_plan.hpp"
#include "vgpu/cache/disk_store.hpp"
#include "vgpu/cache/kernel_key.hpp"
#include "vgpu/cache/precompiled.hpp"
#include "vgpu/kernels/gpu_tuning.hpp"

namespace vgpu_test::contract {

using vgpu::test::pipeline_cache_key;

BACKEND_CASE(vulkan, "L3: every GLSL matmul tiling and split-K's sum compile from embedded SPIR-V", "[l3]") {
  vgpu::Runtime runtime(vgpu::test::only(vgpu::BackendKind::vulkan));  // a new device: its L1 is empty
  vgpu::Device device = runtime.open("vulkan:0");
  std::vector<vgpu::KernelPlan> plans;
  for (const vgpu::kernels::GlslMatmulTiling& t : vgpu::kernels::glsl_matmul_tilings()) {
    if (!t.fits(device.info())) continue;
    plans.push_back(vgpu_test::matmul_with(vgpu::kernels::gpu_builtin_tuner(t.name()), device.info(), 300, 200, 100));
  }
  // A tall-skinny product: two kernels, the slices and their sum.
  const vgpu::KernelPlan split = vgpu::ops::matmul(device.info(), 8, 65536, 8);
  REQUIRE(split.kernel_count() == 2);
  const vgpu::CounterSnapshot before = device.counters();
  for (const auto& p : plans) device.compile(p.source, p.options);
  for (std::size_t i = 0; i < split.kernel_count(); ++i)
    device.compile(split.kernel_source(i), split.kernel_options(i));
  const vgpu::CounterSnapshot d = device.counters() - before;
  INFO(d.to_string());
  CHECK(d.source_compiles == 0);
  CHECK(d.l3_hits == plans.size() + 1);  // split's tile is one of the tilings: an L1 hit
}

BACKEND_CASE(vulkan, "L3: every built-in op compiles from embedded SPIR-V with no GLSL compile", "[l3]") {
  // 6 matmul tilings, 4 cooperative-matrix ones, split-K's sum, softmax's split, the 16-bit
  // conversions' two directions.
  CHECK(vgpu::cache::precompiled_spirv_count() == 19);

  vgpu::Runtime runtime(vgpu::test::only(vgpu::BackendKind::vulkan));  // a new device: its L1 is empty
  vgpu::Device device = runtime.open("vulkan:0");
  const vgpu::DeviceInfo& info = device.info();
  vgpu::DeviceInfo limited = info;  // a low loop limit: softmax_rows splits even short rows over groups
  limited.limits.max_loop_iterations = 400;
  const std::vector<vgpu::KernelPlan> plans = {vgpu::ops::matmul(info, 33, 17, 45),
                                               vgpu::ops::axpy(info, 1000),
                                               vgpu::ops::add(info, 1000),
                                               vgpu::ops::mul(info, 1000),
                                               vgpu::ops::reduce_sum(info, 100000),
                                               vgpu::ops::softmax_rows(info, 15, 17),
                                               vgpu::ops::softmax_rows(limited, 2, 70001)};
  REQUIRE(plans[6].steps.size() == 2);  // the split kernel's two phases
  std::set<std::string> keys;
  for (const auto& p : plans)
    keys.insert(
        vgpu::cache::make_kernel_key(p.source, *p.source.find(vgpu::dialect::glsl), p.options, info.fingerprint).hex());
  REQUIRE(keys.size() == 7);  // add and mul share a body but not their defines

  const vgpu::CounterSnapshot before = device.counters();
  for (const auto& p : plans) {
    INFO(p.source.name);
    const vgpu::Kernel k = device.compile(p.source, p.options);
    CHECK(keys.count(k.key_hex()) == 1);
  }
  vgpu::CounterSnapshot d = device.counters() - before;
  INFO("first compiles: " << d.to_string());
  CHECK(d.source_compiles == 0);
  CHECK(d.l3_hits == keys.size());
  CHECK(d.compiles == keys.size());
  CHECK(d.l1_misses == keys.size());
  CHECK(d.l2_hits == 0);  // L3 answers before the disk store is asked
  CHECK(d.l2_misses == 0);

  // Again, and other shapes of the same ops: all L1 hits, no tier below is asked.
  const vgpu::CounterSnapshot before2 = device.counters();
  for (const auto& p : plans) device.compile(p.source, p.options);
  // (40x20x50 takes the same matmul tiling as 33x17x45 on every device: 32x32, the smallest tile.)
  for (const auto& p : {vgpu::ops::matmul(info, 40, 20, 50), vgpu::ops::add(info, 7), vgpu::ops::reduce_sum(info, 3)})
    device.compile(p.source, p.options);
  d = device.counters() - before2;
  INFO("second compiles: " << d.to_string());
  CHECK(d.l1_hits == plans.size() + 3);
  CHECK(d.compiles == 0);
  CHECK(d.l3_hits == 0);
  CHECK(d.source_compiles == 0);

  // The embedded SPIR-V computes the right thing.
  HostTensors mm{random_floats(33 * 17, 1), random_floats(17 * 45, 2), std::vector<float>(33 * 45)};
  run_raw(device, plans[0], mm);
  const Comparison cm = compare(mm[2], matmul_reference(mm[0], mm[1], 33, 17, 45));
  INFO("matmul: " << cm.describe());
  CHECK(cm.ok());
  HostTensors sm{random_floats(15 * 17, 3), std::vector<float>(15 * 17)};
  run_raw(device, plans[5], sm);
  const Comparison cs = compare(sm[1], softmax_reference(sm[0], 15, 17));
  INFO("softmax: " << cs.describe());
  CHECK(cs.ok());

  // A 16-bit plan's conversion kernels come from L3 as well (its op kernel is add's: an L1 hit).
  const vgpu::KernelPlan half = vgpu::ops::plan("add", info, {1000}, vgpu::DType::f16);
  REQUIRE(half.kernel_count() == 3);
  const vgpu::CounterSnapshot before3 = device.counters();
  for (std::size_t i = 0; i < half.kernel_count(); ++i) device.compile(half.kernel_source(i), half.kernel_options(i));
  d = device.counters() - before3;
  INFO("16-bit plan: " << d.to_string());
  CHECK(d.l1_hits == 1);
  CHECK(d.l3_hits == 2);
  CHECK(d.source_compiles == 0);
}

BACKEND_CASE(vulkan, "L2 damage: a garbage pipeline-cache entry is rejected before the driver sees it, and counted",
             "[l2][corrupt][counters]") {
  // In process: the global store is this test's private directory (ctest environment).
  DiskStore& store = DiskStore::global();
  if (!store.enabled())
    return skip("the L2 store is disabled here (VGPU_CACHE_DISABLE or an unusable VGPU_CACHE_DIR); nothing to test");
  Bytes pattern(256);
  for (std::size_t i = 0; i < pattern.size(); ++i) pattern[i] = static_cast<std::uint8_t>(i * 37 + 11);
  for (const Bytes& garbage : {pattern, Bytes(64, 0xee)}) {
    INFO(garbage.size() << " bytes of garbage");
    vgpu::Runtime probe(vgpu::test::only(vgpu::BackendKind::vulkan));
    const vgpu::DeviceInfo info = probe.devices().at(0);
    REQUIRE(store.store(EntryKind::vk_pipeline_cache, pipeline_cache_key(info), info.fingerprint, garbage, 0));

    // The store's payload check refuses it (its header size is not 32): "invalid".
    const auto header_rejects = [&] {
      const auto r = store.stats().rejected;
      const auto it = r.find("invalid");
      return it == r.end() ? std::uint64_t{0} : it->second;
    };
    const std::uint64_t rejected_before = header_rejects();
    vgpu::Runtime runtime(vgpu::test::only(vgpu::BackendKind::vulkan));
    vgpu::Device device = runtime.open("vulkan:0");  // must not throw or crash

    // The device works; a built-in and a user kernel give right results. The pipeline cache is
    // read (and checked) at the device's first compile, once core has attached the device's
    // counters: its rejection counts in l2_rejected (counters.hpp: "on-disk entries dropped").
    const auto plan = vgpu::ops::add(device.info(), 1000);
    HostTensors args{random_floats(1000, 7), random_floats(1000, 8), std::vector<float>(1000)};
    run_raw(device, plan, args);
    CHECK(header_rejects() == rejected_before + 1);
    CHECK(device.counters().l2_rejected == 1);
    const Comparison c = compare(args[2], binary_reference(args[0], args[1], false));
    INFO(c.describe());
    CHECK(c.ok());
    check_scale_add(device,
                    device.compile(scale_add_source(vgpu::BackendKind::vulkan, kScaleAddGlsl), scale_add_options()),
                    1000, 64);
  }
}

BACKEND_CASE(vulkan, "L2 damage: a pipeline-cache blob with this device's header but a garbage body is survived",
             "[l2][corrupt]") {
  TempDir tmp("vk-");
  const fs::path dir = tmp.path / "cache";
  vgpu::Device device = open_device(backend);
  {
    auto blob = entry_after_child(backend, dir, EntryKind::vk_pipeline_cache, pipeline_cache_key(device.info()));
    if (!blob || blob->size() < 32) return skip("the driver saved no pipeline cache; nothing to damage");
    DiskStore store(options_for(dir));
    // Keep the 32-byte header the backend checks (device and cache UUID), then 4 KiB of noise.
    blob->resize(32 + 4096);
    std::uint32_t state = 2463534242u;
    for (std::size_t i = 32; i < blob->size(); ++i) {
      state ^= state << 13, state ^= state >> 17, state ^= state << 5;
      (*blob)[i] = static_cast<std::uint8_t>(state);
    }
    REQUIRE(store.store(EntryKind::vk_pipeline_cache, pipeline_cache_key(device.info()), device.info().fingerprint,
                        *blob, 0));
  }
  for (int run = 0; run < 2; ++run) {
    const ChildRun r = run_child(backend, dir);
    INFO("run " << run << " on the damaged pipeline cache:\n" << r.output);
    CHECK(r.ok());
    CHECK(r.count("source_compiles") == 0);  // the SPIR-V entry is untouched
  }
}

}  // namespace vgpu_test::contract
