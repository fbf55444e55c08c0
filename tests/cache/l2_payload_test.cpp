// SPDX-License-Identifier: Apache-2.0
// tests/cache/l2_payload_test.cpp — the checks an L2 payload passes before any driver sees it
// (vgpu/cache/payload_check.hpp): a checksum-valid but damaged SPIR-V entry is marked invalid by
// DiskStore::list(true) and `vgpu-probe cache verify`, dropped by load() as "invalid"; the
// VkPipelineCache header, CUDA image (ELF bounds, PTX terminator) and GL binary rules.
#if !defined(_WIN32)
#include <sys/wait.h>
#endif

#include <algorithm>
#include "support/catch.hpp"
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <vector>

#include "vgpu/kernels/glsl_source.hpp"
#include "support/cache_fixtures.hpp"
#include "support/helper_path.hpp"
#include "vgpu/cache/disk_store.hpp"
#include "vgpu/cache/payload_check.hpp"
#include "vgpu/cache/precompiled.hpp"

#ifndef VGPU_PROBE
#error "VGPU_PROBE (path of vgpu-probe) must be defined by the build"
#endif

namespace vgpu_test {
namespace {

using vgpu::test::run_command;

const vgpu::DeviceFingerprint kDevice = vgpu::test::fingerprint("backend=test;model=payload");
constexpr KernelKey kKey{0xabcdefull, 0x123456ull};

/// The embedded SPIR-V of the built-in axpy kernel (empty without the Vulkan backend).
Bytes builtin_spirv() {
  const auto* words = vgpu::cache::find_precompiled_spirv(vgpu::kernels::builtin_glsl("axpy"), {});
  if (!words) return {};
  Bytes b(words->size() * 4);
  std::memcpy(b.data(), words->data(), b.size());
  return b;
}

void put16(Bytes& b, std::size_t at, std::uint16_t v) { std::memcpy(b.data() + at, &v, 2); }
void put32(Bytes& b, std::size_t at, std::uint32_t v) { std::memcpy(b.data() + at, &v, 4); }
void put64(Bytes& b, std::size_t at, std::uint64_t v) { std::memcpy(b.data() + at, &v, 8); }

/// A minimal well-formed ELF64 CUDA image: header, a section-name table, three section headers
/// (null, .shstrtab, .text) and 16 bytes of "code".
Bytes tiny_cubin() {
  const std::string names("\0.shstrtab\0.text\0", 17);
  const std::size_t names_at = 64, text_at = names_at + 32, shoff = text_at + 16;
  Bytes b(shoff + 3 * 64, 0);
  const std::uint8_t ident[8] = {0x7f, 'E', 'L', 'F', 2, 1, 1, 0x33};
  std::memcpy(b.data(), ident, 8);
  put16(b, 16, 2);      // e_type: executable
  put16(b, 18, 190);    // e_machine: EM_CUDA
  put32(b, 20, 1);      // e_version
  put64(b, 40, shoff);  // e_shoff
  put16(b, 52, 64);     // e_ehsize
  put16(b, 58, 64);     // e_shentsize
  put16(b, 60, 3);      // e_shnum
  put16(b, 62, 1);      // e_shstrndx
  std::memcpy(b.data() + names_at, names.data(), names.size());
  const std::size_t sh1 = shoff + 64, sh2 = shoff + 128;
  put32(b, sh1 + 0, 1), put32(b, sh1 + 4, 3), put64(b, sh1 + 24, names_at), put64(b, sh1 + 32, names.size());
  put32(b, sh2 + 0, 11), put32(b, sh2 + 4, 1), put64(b, sh2 + 24, text_at), put64(b, sh2 + 32, 16);
  return b;
}

}  // namespace

TEST_CASE("a resealed SPIR-V entry that fails validation: list(true) and cache verify mark it invalid, load drops it",
          "[l2][payload]") {
  Bytes spirv = builtin_spirv();
  if (spirv.empty()) {
    SUCCEED("built without the Vulkan backend: no SPIR-V to damage");
    return;
  }
  REQUIRE(vgpu::cache::spirv_problem(spirv) == "");
  spirv.resize(spirv.size() - 4);  // drops OpFunctionEnd: whole words, the magic intact, not valid SPIR-V
  const std::string why = vgpu::cache::spirv_problem(spirv);
  INFO(why);
  CHECK_THAT(why, Catch::Matchers::ContainsSubstring("SPIR-V validation (vulkan1.1) failed"));

  TempDir t("payload-");
  const fs::path dir = t.path / "cache";
  {
    DiskStore store(options_for(dir));
    REQUIRE(store.store(EntryKind::spirv, kKey, kDevice, spirv, 1));  // resealed: valid checksums
    const auto quick = store.list(false);                             // headers only
    REQUIRE(quick.size() == 1);
    CHECK(quick[0].valid);
    const auto full = store.list(true);
    REQUIRE(full.size() == 1);
    CHECK_FALSE(full[0].valid);
    CHECK_THAT(full[0].problem, Catch::Matchers::StartsWith("invalid: SPIR-V validation"));
  }

  // `vgpu-probe cache verify` runs the same checks, and --fix deletes the entry.
  const std::string probe = "env -u VGPU_CACHE_DISABLE VGPU_LOG=warn VGPU_CACHE_DIR=" + quoted(dir.string()) + " " +
                            quoted(vgpu::test::helper_path(VGPU_PROBE)) + " cache verify";
  auto [rc, out] = run_command(probe + " --json");
  INFO(out);
  CHECK(rc == 1);
  const auto j = nlohmann::json::parse(out);
  REQUIRE(j["bad"].size() == 1);
  CHECK_THAT(j["bad"][0]["problem"].get<std::string>(), Catch::Matchers::StartsWith("invalid: "));
  CHECK(j["bad"][0]["kind"] == "spirv");

  // load() drops it, counted as "invalid"; a good module stored again loads.
  DiskStore store(options_for(dir));
  CHECK_FALSE(store.load(EntryKind::spirv, kKey, kDevice));
  CHECK(store.stats().rejected == std::map<std::string, std::uint64_t>{{"invalid", 1}});
  CHECK(store.list(false).empty());
  REQUIRE(store.store(EntryKind::spirv, kKey, kDevice, builtin_spirv(), 1));
  CHECK(store.load(EntryKind::spirv, kKey, kDevice));
  std::tie(rc, out) = run_command(probe);
  CHECK(rc == 0);
}

TEST_CASE("SPIR-V payloads: not whole words, no magic or no GLCompute main are invalid", "[l2][payload]") {
  CHECK_THAT(vgpu::cache::spirv_problem(Bytes(22, 0)), Catch::Matchers::StartsWith("not SPIR-V"));
  CHECK_THAT(vgpu::cache::spirv_problem(Bytes(24, 0)), Catch::Matchers::StartsWith("not SPIR-V"));
  CHECK_THAT(vgpu::cache::payload_problem(EntryKind::spirv, Bytes{}), Catch::Matchers::StartsWith("not SPIR-V"));
  Bytes spirv = builtin_spirv();
  if (spirv.empty()) return;
  // Rename the entry point: still valid SPIR-V, but no "main" for the pipeline to ask for.
  const std::string name = "main";
  auto at = std::search(spirv.begin(), spirv.end(), name.begin(), name.end());
  REQUIRE(at != spirv.end());
  *at = 'n';
  CHECK(vgpu::cache::spirv_problem(spirv) == "the SPIR-V module has no GLCompute entry point named \"main\"");
}

TEST_CASE("VkPipelineCache payloads: a 32-byte version-one header, and the device's ids when given", "[l2][payload]") {
  Bytes blob(48, 0);
  put32(blob, 0, 32);
  put32(blob, 4, 1);
  put32(blob, 8, 0x10de);
  put32(blob, 12, 0x2335);
  for (int i = 0; i < 16; ++i) blob[16 + i] = static_cast<std::uint8_t>(i + 1);
  vgpu::cache::PipelineCacheIdentity device{0x10de, 0x2335, {}};
  for (int i = 0; i < 16; ++i) device.uuid[i] = static_cast<std::uint8_t>(i + 1);
  CHECK(vgpu::cache::pipeline_cache_problem(blob) == "");
  CHECK(vgpu::cache::pipeline_cache_problem(blob, &device) == "");
  CHECK(vgpu::cache::payload_problem(EntryKind::vk_pipeline_cache, blob) == "");

  CHECK_THAT(vgpu::cache::pipeline_cache_problem(Bytes(31, 0)), Catch::Matchers::ContainsSubstring("shorter than"));
  Bytes huge = blob;
  put32(huge, 0, 0xffffffff);  // once passed "headerSize >= 32" on to the driver
  CHECK_THAT(vgpu::cache::pipeline_cache_problem(huge),
             Catch::Matchers::ContainsSubstring("header size is 4294967295"));
  Bytes version = blob;
  put32(version, 4, 2);
  CHECK_THAT(vgpu::cache::pipeline_cache_problem(version), Catch::Matchers::ContainsSubstring("version is 2"));
  Bytes other = blob;
  put32(other, 12, 0x2336);
  CHECK(vgpu::cache::pipeline_cache_problem(other) == "");
  CHECK_THAT(vgpu::cache::pipeline_cache_problem(other, &device),
             Catch::Matchers::ContainsSubstring("another vendor or device"));
  Bytes uuid = blob;
  uuid[31] ^= 1;
  CHECK_THAT(vgpu::cache::pipeline_cache_problem(uuid, &device),
             Catch::Matchers::ContainsSubstring("pipelineCacheUUID"));

  // Through the store: the resealed entry is dropped as invalid.
  TempDir t("payload-");
  DiskStore store(options_for(t.path));
  REQUIRE(store.store(EntryKind::vk_pipeline_cache, kKey, kDevice, huge, 0));
  CHECK_FALSE(store.load(EntryKind::vk_pipeline_cache, kKey, kDevice));
  CHECK(store.stats().rejected.at("invalid") == 1);
}

TEST_CASE("CUDA payloads: an ELF64 CUDA image whose parts lie inside it, or NUL-terminated PTX", "[l2][payload]") {
  const Bytes good = tiny_cubin();
  CHECK(vgpu::cache::cuda_image_problem(good) == "");
  CHECK(vgpu::cache::payload_problem(EntryKind::cuda_binary, good) == "");
  const std::string ptx = std::string(".version 7.0\n.target sm_75\n") + '\0';
  CHECK(vgpu::cache::cuda_image_problem(Bytes(ptx.begin(), ptx.end())) == "");
  CHECK_THAT(vgpu::cache::cuda_image_problem(Bytes(ptx.begin(), ptx.end() - 1)),
             Catch::Matchers::ContainsSubstring("neither"));
  CHECK_THAT(vgpu::cache::cuda_image_problem(Bytes{}), Catch::Matchers::ContainsSubstring("neither"));

  const std::size_t shoff = 64 + 32 + 16;
  const std::vector<std::pair<const char*, std::function<void(Bytes&)>>> damage = {
      {"truncated header", [](Bytes& b) { b.resize(40); }},
      {"32-bit class", [](Bytes& b) { b[4] = 1; }},
      {"big-endian", [](Bytes& b) { b[5] = 2; }},
      {"another machine", [](Bytes& b) { put16(b, 18, 62); }},
      {"section headers past the end", [](Bytes& b) { put64(b, 40, b.size() - 64); }},
      {"huge section count", [](Bytes& b) { put16(b, 60, 0xffff); }},
      {"section offset overflow", [&](Bytes& b) { put64(b, shoff + 128 + 24, ~0ull - 4); }},
      {"section size past the end", [&](Bytes& b) { put64(b, shoff + 128 + 32, 1ull << 40); }},
      {"name table index out of range", [](Bytes& b) { put16(b, 62, 7); }},
      {"name table not a string table", [&](Bytes& b) { put32(b, shoff + 64 + 4, 1); }},
      {"name table not NUL-terminated", [](Bytes& b) { b[64 + 16] = 'x'; }},
      {"section name outside the table", [&](Bytes& b) { put32(b, shoff + 128, 1000); }},
      {"program headers past the end", [](Bytes& b) { put64(b, 32, 1ull << 50), put16(b, 54, 56), put16(b, 56, 1); }},
  };
  for (const auto& [what, change] : damage) {
    INFO(what);
    Bytes b = good;
    change(b);
    CHECK(vgpu::cache::cuda_image_problem(b) != "");
  }
}

TEST_CASE("GL program binaries need a format word and at least one byte, and selections pass to their reader",
          "[l2][payload]") {
  CHECK(vgpu::cache::payload_problem(EntryKind::gl_program_binary, Bytes{1, 2, 3, 4}) != "");
  CHECK(vgpu::cache::payload_problem(EntryKind::gl_program_binary, Bytes{1, 2, 3, 4, 5}) == "");
  CHECK(vgpu::cache::payload_problem(EntryKind::selection, Bytes{'x'}) == "");
}

}  // namespace vgpu_test
