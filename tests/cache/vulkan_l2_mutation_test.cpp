// SPDX-License-Identifier: Apache-2.0
// tests/cache/vulkan_l2_mutation_test.cpp — Vulkan's own L2 tests, part of vgpu-test-backends: L2
// entries whose payload was damaged and then resealed with valid header and payload checksums
// (what a bit flip before the write, a buggy tool or a hostile user leaves behind). Seeded
// random byte mutations of a user kernel's SPIR-V entry and of the device's pipeline-cache entry
// each run in a child process (vgpu-test-backend-child), so a crash fails the test instead of
// killing it: each run must either reject the entry (counted "invalid", or "driver"/"header"
// where the backend refused it) and rebuild, or use it and give the right result. Also: valid
// SPIR-V that does not fit its pipeline (an undeclared binding) is rejected from L2, and is a
// compile_error when the kernel's own GLSL produces it.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "contract/contract.hpp"
#include "support/cache_fixtures.hpp"
#include "support/expect_error.hpp"
#include "support/scale_add_kernel.hpp"
#include "vgpu/cache/disk_store.hpp"
#include "vgpu/cache/kernel_key.hpp"
#include "vgpu/cache/payload_check.hpp"
#include "vgpu/vgpu.hpp"

namespace vgpu_test::contract {
namespace {

/// One seeded mutation: 1 to 4 bytes at or after offset `from` replaced by other values.
struct Mutation {
  Bytes bytes;
  std::string what;  // "@offset 0xold->0xnew, ..."
};

Mutation mutate(const Bytes& original, std::uint32_t seed, std::size_t from) {
  std::mt19937 rng(seed);  // raw mt19937 output is the same on every platform
  Mutation m{original, ""};
  const std::uint32_t count = 1 + rng() % 4;
  for (std::uint32_t i = 0; i < count; ++i) {
    const std::size_t at = from + rng() % (original.size() - from);
    std::uint8_t value = static_cast<std::uint8_t>(rng());
    if (value == m.bytes[at]) value ^= 0xff;
    char buf[48];
    std::snprintf(buf, sizeof buf, "%s@%zu 0x%02x->0x%02x", m.what.empty() ? "" : ", ", at, m.bytes[at], value);
    m.what += buf;
    m.bytes[at] = value;
  }
  return m;
}

}  // namespace

BACKEND_CASE(
    vulkan, "L2 mutations: 40 resealed byte mutations of a user kernel's SPIR-V never crash, each is rejected or right",
    "[l2][corrupt][mutation]") {
  TempDir tmp("vk-mut-");
  const vgpu::DeviceInfo info = open_device(backend).info();
  const KernelKey key = scale_add_key(info);
  auto payload = entry_after_child(backend, tmp.path / "good", EntryKind::spirv, key);
  REQUIRE(payload);
  REQUIRE(payload->size() > 64);
  const Bytes spirv = std::move(*payload);

  int invalid = 0, driver = 0, used = 0;
  for (std::uint32_t seed = 1; seed <= 40; ++seed) {
    const Mutation m = mutate(spirv, seed, 4);  // keep the magic word: a bad magic is trivially caught
    const fs::path dir = tmp.path / ("seed" + std::to_string(seed));
    {
      // DiskStore::store reseals: a fresh header with the mutated payload's checksum.
      DiskStore store(options_for(dir));
      REQUIRE(store.store(EntryKind::spirv, key, info.fingerprint, m.bytes, 1));
    }
    const ChildRun run = run_child(backend, dir);
    INFO("seed " << seed << " (" << m.what << "):\n" << run.output);
    REQUIRE(run.status == 0);  // not a crash (signal), not a wrong result (3), not an error (4)
    REQUIRE(run.ok());
    if (run.rejected("invalid") == 1) {
      ++invalid;
      CHECK(run.count("source_compiles") == 1);
      CHECK(run.count("l2_rejected") == 1);
    } else if (run.rejected("driver") == 1) {
      ++driver;
      CHECK(run.count("source_compiles") == 1);
    } else {
      ++used;  // a harmless change (a name, unused bits): the module ran and was right
      CHECK(run.count("source_compiles") == 0);
      CHECK(run.text("store_rejected") == "none");
    }
    std::printf("spirv mutation seed %u (%s): %s\n", seed, m.what.c_str(),
                run.rejected("invalid")  ? "rejected: invalid"
                : run.rejected("driver") ? "rejected: driver"
                                         : "used, right");
  }
  std::printf("spirv mutations: %d rejected as invalid, %d refused by the driver, %d used with the right result\n",
              invalid, driver, used);
  std::fflush(stdout);
  CHECK(invalid + driver + used == 40);
}

BACKEND_CASE(vulkan,
             "L2 mutations: 40 resealed mutations of the pipeline-cache entry never crash and the kernel stays right",
             "[l2][corrupt][mutation]") {
  TempDir tmp("vk-mut-");
  const vgpu::DeviceInfo info = open_device(backend).info();
  const KernelKey key = vgpu::test::pipeline_cache_key(info);
  auto payload = entry_after_child(backend, tmp.path / "good", EntryKind::vk_pipeline_cache, key);
  if (!payload) return skip("the driver saved no pipeline cache; nothing to mutate");
  const Bytes blob = std::move(*payload);
  REQUIRE(blob.size() >= 32);
  int rejected_runs = 0, used = 0;
  for (std::uint32_t seed = 1; seed <= 40; ++seed) {
    // Seeds 4k damage bytes anywhere; 4k+2 only the headerSize field (which must be 32); odd
    // ones keep the header this device wrote and append 1-256 bytes of noise, the part the
    // driver itself must parse (the header is checked here).
    Mutation m{blob, ""};
    if (seed % 4 == 0) {
      m = mutate(blob, seed, 0);
    } else if (seed % 4 == 2) {
      std::mt19937 rng(seed);
      const std::uint32_t size = 33 + rng() % (seed < 20 ? 256 : 0xfffffff0u);
      std::memcpy(m.bytes.data(), &size, 4);
      m.what = "headerSize " + std::to_string(size);
    } else {
      std::mt19937 rng(seed);
      const std::uint32_t extra = 1 + rng() % 256;
      for (std::uint32_t i = 0; i < extra; ++i) m.bytes.push_back(static_cast<std::uint8_t>(rng()));
      m.what = std::to_string(extra) + " bytes appended";
    }
    const fs::path dir = tmp.path / ("seed" + std::to_string(seed));
    {
      DiskStore store(options_for(dir));
      REQUIRE(store.store(EntryKind::vk_pipeline_cache, key, info.fingerprint, m.bytes, 0));
    }
    const ChildRun run = run_child(backend, dir);
    INFO("seed " << seed << " (" << m.what << "):\n" << run.output);
    REQUIRE(run.status == 0);
    REQUIRE(run.ok());
    CHECK(run.count("source_compiles") == 1);  // only the pipeline cache was planted
    const std::uint64_t refused = run.rejected("invalid") + run.rejected("header") + run.rejected("driver");
    CHECK(refused <= 1);
    refused ? ++rejected_runs : ++used;
    // A damaged header never stays: refused (and replaced by the device's own data), or it was
    // good and the device saved its cache over the noise. (Once a headerSize other than 32
    // passed, the driver ignored the blob, and the entry stayed damaged for every process.)
    DiskStore store(options_for(dir));
    const auto after = store.load(EntryKind::vk_pipeline_cache, key, info.fingerprint);
    REQUIRE(after);
    REQUIRE(after->size() >= 32);
    CHECK(std::equal(after->begin(), after->begin() + 32, blob.begin()));
  }
  std::printf("pipeline-cache mutations: %d rejected, %d handed to the driver, all right\n", rejected_runs, used);
  std::fflush(stdout);
}

BACKEND_CASE(vulkan, "L2: valid SPIR-V whose binding the kernel does not declare is rejected as invalid and recompiled",
             "[l2][corrupt]") {
  TempDir tmp("vk-mut-");
  const fs::path dir = tmp.path / "cache";
  const vgpu::DeviceInfo info = open_device(backend).info();
  const KernelKey key = scale_add_key(info);
  Bytes spirv = entry_after_child(backend, dir, EntryKind::spirv, key).value();
  // OpDecorate %var Binding 2 (opcode 71, 4 words; Binding is decoration 33) → Binding 7: still
  // valid SPIR-V, but the pipeline layout has no binding 7.
  std::vector<std::uint32_t> words(spirv.size() / 4);
  std::memcpy(words.data(), spirv.data(), spirv.size());
  bool changed = false;
  for (std::size_t i = 5; i < words.size() && !changed; i += std::max<std::uint32_t>(words[i] >> 16, 1))
    if (words[i] == ((4u << 16) | 71u) && words[i + 2] == 33 && words[i + 3] == 2) words[i + 3] = 7, changed = true;
  REQUIRE(changed);
  std::memcpy(spirv.data(), words.data(), spirv.size());
  CHECK(vgpu::cache::spirv_problem(spirv).empty());  // the validator alone cannot tell
  {
    DiskStore store(options_for(dir));
    REQUIRE(store.store(EntryKind::spirv, key, info.fingerprint, spirv, 1));
  }
  const ChildRun run = run_child(backend, dir);
  INFO(run.output);
  REQUIRE(run.ok());
  CHECK(run.count("source_compiles") == 1);
  CHECK(run.count("l2_rejected") == 1);
  CHECK(run.rejected("invalid") == 1);
  const ChildRun again = run_child(backend, dir);
  INFO(again.output);
  REQUIRE(again.ok());
  CHECK(again.count("source_compiles") == 0);
}

BACKEND_CASE(vulkan, "user GLSL kernel using a buffer it does not declare fails with compile_error, not in the driver",
             "[user][errors]") {
  vgpu::Runtime runtime(vgpu::test::only(vgpu::BackendKind::vulkan));
  vgpu::Device device = runtime.open("vulkan:0");
  vgpu::KernelSource source = scale_add_source(vgpu::BackendKind::vulkan, kScaleAddGlsl);
  source.name = "test.vk_undeclared_binding";
  source.bindings.pop_back();  // the GLSL writes binding 2
  const vgpu::CounterSnapshot before = device.counters();
  REQUIRE_VGPU_ERROR(compile_error, "binding 2, which the kernel does not declare",
                     device.compile(source, scale_add_options()));
  CHECK((device.counters() - before).l2_writes == 0);  // nothing is cached for a kernel that cannot run
  vgpu::KernelSource small_params = scale_add_source(vgpu::BackendKind::vulkan, kScaleAddGlsl);
  small_params.name = "test.vk_small_params";
  small_params.params_size = 8;  // the VGPU_PARAMS block is 16 bytes
  REQUIRE_VGPU_ERROR(compile_error, "past the 8-byte params block", device.compile(small_params, scale_add_options()));
  // The device still builds the kernel as declared.
  const vgpu::Kernel good =
      device.compile(scale_add_source(vgpu::BackendKind::vulkan, kScaleAddGlsl), scale_add_options());
  CHECK(run_scale_add(device, good, 1000, 64).ok());
}

}  // namespace vgpu_test::contract
