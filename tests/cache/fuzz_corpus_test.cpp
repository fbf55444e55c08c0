// SPDX-License-Identifier: Apache-2.0
// tests/cache/fuzz_corpus_test.cpp — vgpu-test-fuzz-corpus: the payload checks accept everything vgpu
// itself produces (every built-in kernel's embedded SPIR-V and a run-time compiled user kernel
// pass SPIRV-Tools' validator and the pipeline interface check; real entries of every kind pass
// DiskStore::list(true)), and, while at it, the seed corpora of the fuzz targets (tests/fuzz/)
// are written from those real artifacts into VGPU_FUZZ_CORPUS_DIR/<target>/ in the build tree:
//   spirv/     SPIR-V modules (L3 built-ins, the scale-add user kernel)
//   selection/ persisted selection JSON (a real calibration on test devices, one of which
//              computes wrong, and an "only" one)
//   l2_entry/  one flag byte + a real entry file of each kind (flags 0: as is; 7: resealed)
//   bundle/    a real bundle of those entries (flag 1: the file; 2: manifest, NUL, payloads)
// tools/dev.sh fuzz and test run this first, then the fuzz targets on these folders.
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "selection_json.hpp"
#include "selection_store.hpp"
#include "support/cache_fixtures.hpp"
#include "support/catch.hpp"
#include "support/scale_add_kernel.hpp"
#include "support/test_backend.hpp"
#include "vgpu/cache/disk_store.hpp"
#include "vgpu/cache/payload_check.hpp"
#include "vgpu/cache/precompiled.hpp"
#include "vgpu/cache_bundle.hpp"
#include "vgpu/kernels/glsl_source.hpp"
#include "vgpu/vgpu.hpp"
#if VGPU_WITH_VULKAN
#include "vgpu/shader/shader_tools.hpp"
#include "spirv_interface.hpp"
#endif

#ifndef VGPU_FUZZ_CORPUS_DIR
#error "VGPU_FUZZ_CORPUS_DIR must be defined by the build"
#endif

namespace vgpu_test {
namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<std::uint8_t>;
using vgpu::cache::EntryKind;

void write_seed(const std::string& target, const std::string& name, const Bytes& bytes) {
  const fs::path dir = fs::path(VGPU_FUZZ_CORPUS_DIR) / target;
  fs::create_directories(dir);
  std::ofstream out(dir / name, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  REQUIRE(out.good());
}

Bytes bytes_of(const std::vector<std::uint32_t>& words) {
  Bytes b(words.size() * 4);
  std::memcpy(b.data(), words.data(), b.size());
  return b;
}

Bytes bytes_of(const std::string& text) { return Bytes(text.begin(), text.end()); }

/// Every built-in kernel plan vgpu compiles for GLSL (the L3 variants), on device; softmax_rows
/// also split over groups, as on a device whose driver cuts loops short (a low limit splits short rows).
std::vector<vgpu::KernelPlan> builtin_plans(const vgpu::DeviceInfo& d) {
  vgpu::DeviceInfo limited = d;
  limited.limits.max_loop_iterations = 400;
  return {vgpu::ops::matmul(d, 33, 17, 45),
          vgpu::ops::axpy(d, 1000),
          vgpu::ops::add(d, 1000),
          vgpu::ops::mul(d, 1000),
          vgpu::ops::reduce_sum(d, 100000),
          vgpu::ops::softmax_rows(d, 15, 17),
          vgpu::ops::softmax_rows(limited, 2, 70001)};
}

#if VGPU_WITH_VULKAN
std::string interface_problem(const std::vector<std::uint32_t>& words, const vgpu::KernelSource& source,
                              const vgpu::CompileOptions& options) {
  std::vector<std::uint32_t> slots;
  for (const auto& b : source.bindings) slots.push_back(b.slot);
  return vgpu::vulkan::spirv_interface_problem(words, {slots, (source.params_size + 3u) & ~3u, options.workgroup_size});
}
#endif

/// The scale-add user kernel's SPIR-V as the Vulkan backend compiles it at run time.
std::vector<std::uint32_t> scale_add_spirv() {
#if VGPU_WITH_VULKAN
  const auto options = scale_add_options();
  const std::string text = vgpu::kernels::assemble_glsl(kScaleAddGlsl, options.defines, options.workgroup_size,
                                                        vgpu::kernels::GlslTarget::vulkan, 0);
  return vgpu::shader::compile_glsl_body(text, "test.vk_scale_add");
#else
  return {};
#endif
}

/// Stores a real entry of every kind (the SPIR-V only with the Vulkan backend) for runtime's
/// first device; returns how many.
std::uint64_t store_every_kind(vgpu::cache::DiskStore& store, vgpu::Runtime& runtime) {
  const vgpu::DeviceFingerprint fp = runtime.devices().at(0).fingerprint;
  vgpu::Selection s = runtime.explain("axpy", {1000});
  Bytes pipeline_cache(32, 0);
  pipeline_cache[0] = 32, pipeline_cache[4] = 1;  // a header-only VkPipelineCache blob, as lavapipe writes
  const std::string ptx =
      std::string(".version 7.0\n.target sm_75\n.address_size 64\n.visible .entry k()\n{\n ret;\n}\n") + '\0';
  Bytes gl_binary = {0x41, 0x87, 0, 0};  // a format word, then the driver's bytes
  for (int i = 0; i < 64; ++i) gl_binary.push_back(static_cast<std::uint8_t>(i * 7));
  const std::vector<std::pair<EntryKind, Bytes>> payloads = {{EntryKind::spirv, bytes_of(scale_add_spirv())},
                                                             {EntryKind::vk_pipeline_cache, pipeline_cache},
                                                             {EntryKind::gl_program_binary, gl_binary},
                                                             {EntryKind::cuda_binary, bytes_of(ptx)}};
  std::uint64_t i = 0;
  for (const auto& [kind, payload] : payloads) {
    if (payload.empty()) continue;  // no SPIR-V without the Vulkan backend
    // A pipeline cache's key is derived from its fingerprint, as the Vulkan backend derives it.
    const vgpu::cache::KernelKey key = kind == EntryKind::vk_pipeline_cache
                                           ? vgpu::cache::KernelKey{vgpu::cache::hash64("vk-pipeline-cache"), fp.hash}
                                           : vgpu::cache::KernelKey{0x5eed, i + 1};
    REQUIRE(store.store(kind, key, fp, payload, 100));
    ++i;
  }
  // A selection, stored as the runtime stores one: under its key text.
  vgpu::detail::store_selection(store,
                                "select;op=axpy;class=10;devices=" + runtime.devices().at(0).id() + "=" + fp.hex(), s);
  return i + 1;
}

}  // namespace

TEST_CASE("every SPIR-V vgpu produces passes the payload and interface checks (and seeds the spirv corpus)",
          "[fuzz][corpus]") {
#if !VGPU_WITH_VULKAN
  SUCCEED("built without the Vulkan backend: no SPIR-V is produced");
#else
  // The built-in plans as ops.cpp makes them for a Vulkan device (their defines, e.g. the
  // matmul tiling, depend on the device, and L3 holds exactly the Vulkan ones).
  vgpu::Runtime runtime(vgpu::test::only(vgpu::BackendKind::vulkan));
  if (runtime.devices().empty()) {
    WARN("no Vulkan device: the built-in kernels' plans cannot be made; checking the user kernel only");
  }
  int n = 0;
  const std::vector<vgpu::KernelPlan> plans =
      runtime.devices().empty() ? std::vector<vgpu::KernelPlan>{} : builtin_plans(runtime.devices().at(0));
  for (const vgpu::KernelPlan& plan : plans) {
    INFO(plan.source.name);
    const auto* words =
        vgpu::cache::find_precompiled_spirv(plan.source.find(vgpu::dialect::glsl)->code, plan.options.defines);
    REQUIRE(words);
    CHECK(vgpu::cache::spirv_problem(bytes_of(*words)) == "");
    CHECK(interface_problem(*words, plan.source, plan.options) == "");
    write_seed("spirv", "builtin-" + std::to_string(n++) + ".spv", bytes_of(*words));
  }
  const auto user = scale_add_spirv();
  CHECK(vgpu::cache::spirv_problem(bytes_of(user)) == "");
  CHECK(interface_problem(user, scale_add_source(vgpu::BackendKind::vulkan, kScaleAddGlsl), scale_add_options()) == "");
  write_seed("spirv", "scale-add.spv", bytes_of(user));
#endif
}

TEST_CASE("real selections round trip through the strict reader (and seed the selection corpus)", "[fuzz][corpus]") {
  std::vector<std::shared_ptr<TestDeviceKnobs>> knobs = {test_device(2000, "corpus"), test_device(0, "corpus"),
                                                         test_device(2000, "corpus")};
  knobs[2]->wrong_results = true;  // a rejected candidate (check "wrong") in the seed too
  vgpu::Runtime runtime(test_runtime_options(knobs));
  const vgpu::Selection calibrated = runtime.explain("axpy", {1000});
  vgpu::Runtime cpu(vgpu::test::only(vgpu::BackendKind::cpu));
  const vgpu::Selection only = cpu.explain("matmul", {64, 64, 64});
  int n = 0;
  for (const vgpu::Selection& s : {calibrated, only}) {
    const std::string text = vgpu::detail::selection_to_json(s);
    INFO(text);
    std::string why;
    const auto back = vgpu::detail::selection_from_json(text, &why);
    INFO(why);
    REQUIRE(back);
    CHECK(back->device == s.device);
    CHECK(back->candidates.size() == s.candidates.size());
    write_seed("selection", "selection-" + std::to_string(n++) + ".json", bytes_of(text));
  }
}

TEST_CASE("real entries of every kind pass DiskStore::list(true) (and seed the l2_entry corpus)", "[fuzz][corpus]") {
  vgpu::test::TempDir tmp("corpus-");
  vgpu::cache::DiskStore store(vgpu::test::options_for(tmp.path));
  vgpu::Runtime runtime(vgpu::test::only(vgpu::BackendKind::cpu));
  store_every_kind(store, runtime);
  const auto listed = store.list(true);
  REQUIRE(!listed.empty());
  for (const auto& e : listed) {
    INFO(e.path << ": " << e.problem);
    CHECK(e.valid);
    std::ifstream in(e.path, std::ios::binary);
    const Bytes file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    for (std::uint8_t flags : {0, 7}) {
      Bytes seed(file.size() + 1);
      seed[0] = flags;
      std::copy(file.begin(), file.end(), seed.begin() + 1);
      write_seed("l2_entry", std::string(to_string(e.kind)) + "-" + std::to_string(flags) + ".bin", seed);
    }
  }
}

TEST_CASE("a real bundle of entries of every kind imports whole (and seeds the bundle corpus)", "[fuzz][corpus]") {
  vgpu::test::TempDir tmp("corpus-bundle-");
  vgpu::Runtime runtime(vgpu::test::only(vgpu::BackendKind::cpu));
  std::uint64_t stored = 0;
  {
    vgpu::cache::DiskStore store(vgpu::test::options_for(tmp.path / "src"));
    stored = store_every_kind(store, runtime);
  }
  const vgpu::CacheBundleReport exported = vgpu::export_cache_bundle(tmp.path / "src", tmp.path / "all.vgb");
  REQUIRE(exported.exported == stored);
  const vgpu::CacheBundleReport imported =
      vgpu::import_cache_bundle(tmp.path / "all.vgb", tmp.path / "dst",
                                std::vector<vgpu::DeviceFingerprint>{runtime.devices().at(0).fingerprint});
  CHECK(imported.imported == stored);
  CHECK(imported.rejected == 0);
  // The seeds, in vgpu-fuzz-bundle's input format (tests/fuzz/bundle_fuzz.cpp): flag 1 and the
  // file as is; flag 2 and the manifest, a NUL and the payloads (the harness reseals them).
  std::ifstream in(tmp.path / "all.vgb", std::ios::binary);
  const Bytes file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  REQUIRE(file.size() >= 32);
  std::uint64_t manifest = 0;
  for (int i = 7; i >= 0; --i) manifest = manifest << 8 | file[16 + i];
  REQUIRE(32 + manifest <= file.size());
  Bytes raw{1};
  raw.insert(raw.end(), file.begin(), file.end());
  write_seed("bundle", "every-kind-raw.bin", raw);
  Bytes parts{2};
  parts.insert(parts.end(), file.begin() + 32, file.begin() + 32 + static_cast<std::ptrdiff_t>(manifest));
  parts.push_back(0);
  parts.insert(parts.end(), file.begin() + 32 + static_cast<std::ptrdiff_t>(manifest), file.end());
  write_seed("bundle", "every-kind-parts.bin", parts);
}

}  // namespace vgpu_test
