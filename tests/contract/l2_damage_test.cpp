// SPDX-License-Identifier: Apache-2.0
// tests/contract/l2_damage_test.cpp — a damaged or foreign L2 entry costs a recompile, never a
// crash or a wrong result: whether its checksum fails, the store's payload check refuses it
// ("invalid"), or it passes that check and the backend or driver refuses it ("driver"), the
// second process (vgpu-test-backend-child) rejects it, counts it in l2_rejected, compiles from
// source, gets the right result and stores a good entry, which the next process loads.
#include <filesystem>
#include <functional>

#include "contract/contract.hpp"
#include "support/cache_fixtures.hpp"
#include "support/scale_add_kernel.hpp"

namespace vgpu_test::contract {
namespace {

/// Returns "" when device keeps L2 entries of backend (a child on it then does too), else why not.
std::string why_no_entries(const Backend& backend, const vgpu::Device& device) {
  return backend.why_no_l2 ? backend.why_no_l2(device.info()) : std::string();
}

/// Stores payload as the child's kernel entry in dir (resealed: a valid header and checksum).
void plant(const Backend& backend, const vgpu::Device& device, const fs::path& dir, const Bytes& payload) {
  vgpu::cache::DiskStore store(vgpu::test::options_for(dir));
  REQUIRE(store.store(*backend.l2, scale_add_key(device.info()), device.info().fingerprint, payload, 1));
}

/// Checks that the child's kernel entry in dir is a payload the backend built: present, and
/// starting as every one of its payloads does.
void check_replaced(const Backend& backend, const vgpu::Device& device, const fs::path& dir) {
  vgpu::cache::DiskStore store(vgpu::test::options_for(dir));
  const auto payload = store.load(*backend.l2, scale_add_key(device.info()), device.info().fingerprint);
  REQUIRE(payload.has_value());
  REQUIRE(payload->size() >= backend.l2_payload_prefix.size());
  CHECK(std::equal(backend.l2_payload_prefix.begin(), backend.l2_payload_prefix.end(), payload->begin()));
}

bool has_invalid_payloads(const Backend& b) { return b.has_l2() && static_cast<bool>(b.invalid_payloads); }
bool has_driver_refused(const Backend& b) { return b.has_l2() && static_cast<bool>(b.driver_refused); }

}  // namespace

CONTRACT_CASE("L2 damage: a payload that fails its checksum is rejected, counted, recompiled and replaced",
              "[l2][corrupt]", keeps_l2) {
  const vgpu::Device device = open_device(backend);
  if (const std::string why = why_no_entries(backend, device); !why.empty()) return skip(why);
  const std::vector<std::pair<const char*, std::function<void(Bytes&, std::size_t)>>> damages = {
      {"every payload byte xor 0x5a",
       [](Bytes& file, std::size_t payload) {
         for (std::size_t i = file.size() - payload; i < file.size(); ++i) file[i] ^= 0x5a;
       }},
      {"the last byte flipped", [](Bytes& file, std::size_t) { file.back() ^= 0xff; }},
  };
  for (const auto& [what, damage] : damages) {
    INFO(what);
    TempDir tmp(backend.name + "-");
    const fs::path dir = tmp.path / "cache";
    const ChildRun first = run_child(backend, dir);
    INFO("first run:\n" << first.output);
    REQUIRE(first.ok());

    const auto found = vgpu::test::entries(dir, *backend.l2, false);
    REQUIRE(found.size() == 1);
    REQUIRE(found[0].payload_bytes > 0);
    REQUIRE(found[0].file_bytes > found[0].payload_bytes);
    Bytes file = vgpu::test::read_bytes(found[0].path);
    REQUIRE(file.size() == found[0].file_bytes);
    damage(file, found[0].payload_bytes);
    vgpu::test::write_bytes(found[0].path, file);

    const ChildRun second = run_child(backend, dir);
    INFO("run on the damaged entry:\n" << second.output);
    REQUIRE(second.ok());  // a bad cache costs a recompile, never a wrong result
    CHECK(second.count("source_compiles") == 1);
    REQUIRE_THAT(second.text("store_rejected"), Catch::Matchers::ContainsSubstring("checksum:1"));
    CHECK(second.count("l2_rejected") == 1);
    CHECK(second.count("l2_writes") >= 1);

    vgpu::test::check_loaded_from_l2(run_child(backend, dir));  // the repaired entry
    check_replaced(backend, device, dir);
  }
}

CONTRACT_CASE("L2 damage: a well-formed entry the store's payload check refuses is rejected as invalid and recompiled",
              "[l2][corrupt]", has_invalid_payloads) {
  const vgpu::Device device = open_device(backend);
  if (const std::string why = why_no_entries(backend, device); !why.empty()) return skip(why);
  for (const Payload& payload : backend.invalid_payloads()) {
    INFO(payload.what);
    TempDir tmp(backend.name + "-");
    const fs::path dir = tmp.path / "cache";
    plant(backend, device, dir, payload.bytes);
    const ChildRun run = run_child(backend, dir);
    INFO("run on the planted entry:\n" << run.output);
    REQUIRE(run.ok());
    CHECK(run.count("source_compiles") == 1);
    CHECK(run.count("l2_hits") == 0);  // the store's payload check refused it
    CHECK(run.count("l2_rejected") == 1);
    CHECK_THAT(run.text("store_rejected"), Catch::Matchers::ContainsSubstring("invalid:1"));
    CHECK(run.count("l2_writes") >= 1);

    vgpu::test::check_loaded_from_l2(run_child(backend, dir));  // the repaired entry
    check_replaced(backend, device, dir);
  }
}

CONTRACT_CASE("L2 damage: an entry the driver refuses is rejected, counted, recompiled and replaced", "[l2][corrupt]",
              has_driver_refused) {
  const vgpu::Device device = open_device(backend);
  if (const std::string why = why_no_entries(backend, device); !why.empty()) return skip(why);
  TempDir tmp(backend.name + "-");
  const fs::path dir = tmp.path / "cache";
  const auto stored = entry_after_child(backend, dir, *backend.l2, scale_add_key(device.info()));
  REQUIRE(stored.has_value());
  REQUIRE(stored->size() > 4);
  const Bytes good = *stored;
  for (const Payload& payload : backend.driver_refused(good)) {
    INFO(payload.what);
    plant(backend, device, dir, payload.bytes);
    const ChildRun run = run_child(backend, dir);
    INFO("run on the planted entry:\n" << run.output);
    REQUIRE(run.ok());  // a bad cache costs a recompile, never a wrong result
    CHECK(run.count("source_compiles") == 1);
    CHECK(run.count("l2_hits") == 0);
    CHECK(run.count("l2_rejected") == 1);
    CHECK_THAT(run.text("store_rejected"), Catch::Matchers::ContainsSubstring("driver:1"));
    CHECK(run.count("l2_writes") >= 1);  // and a good payload replaces it

    vgpu::test::check_loaded_from_l2(run_child(backend, dir));  // the repaired entry
    check_replaced(backend, device, dir);
  }
}

}  // namespace vgpu_test::contract
