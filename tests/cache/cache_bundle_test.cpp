// SPDX-License-Identifier: Apache-2.0
// tests/cache/cache_bundle_test.cpp — export_cache_bundle / import_cache_bundle (vgpu/cache_bundle.hpp):
// a round trip keeps every entry and fingerprint, and hostile bundles (truncated, wrong magic,
// newer version, damaged or resealed payloads, path-unsafe names, huge sizes, conflicting
// entries) are refused with a Fix hint and leave the target directory exactly as it was.
#if !defined(_WIN32)
#include <sys/stat.h>
#endif

#include <cstring>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "support/cache_fixtures.hpp"
#include "support/catch.hpp"
#include "support/valid_payloads.hpp"
#include "vgpu/cache_bundle.hpp"

namespace {

using namespace vgpu;
using cache::EntryKind;
using test::TempDir;
using vgpu_test::valid_spirv;

/// Every file under dir (relative path → bytes), to prove a refused import changed nothing.
std::map<std::string, std::vector<std::uint8_t>> snapshot(const std::filesystem::path& dir) {
  std::map<std::string, std::vector<std::uint8_t>> files;
  std::error_code ec;
  if (!std::filesystem::exists(dir, ec)) return files;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir))
    files[std::filesystem::relative(e.path(), dir).string()] =
        e.is_regular_file() ? test::read_bytes(e.path()) : std::vector<std::uint8_t>{};
  return files;
}

/// A bundle taken apart: its version, manifest and payload bytes, and put back together with
/// fresh checksums (what a hostile tool would do to get past the header checks).
struct Parts {
  std::uint32_t version = 0;
  nlohmann::json manifest;
  std::vector<std::uint8_t> payloads;

  static Parts of(const std::vector<std::uint8_t>& bytes) {
    REQUIRE(bytes.size() >= 32);
    Parts p;
    std::memcpy(&p.version, bytes.data() + 8, 4);
    std::uint64_t m = 0;
    std::memcpy(&m, bytes.data() + 16, 8);
    p.manifest = nlohmann::json::parse(bytes.begin() + 32, bytes.begin() + 32 + static_cast<std::ptrdiff_t>(m));
    p.payloads.assign(bytes.begin() + 32 + static_cast<std::ptrdiff_t>(m), bytes.end());
    return p;
  }
  std::vector<std::uint8_t> seal() const {
    const std::string text = manifest.dump();
    std::vector<std::uint8_t> out{'V', 'G', 'P', 'U', 'B', 'N', 'D', 'L'};
    const auto put = [&out](std::uint64_t v, int n) {
      for (int i = 0; i < n; ++i) out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
    };
    put(version, 4);
    put(0, 4);
    put(text.size(), 8);
    put(cache::hash64(text), 8);
    out.insert(out.end(), text.begin(), text.end());
    out.insert(out.end(), payloads.begin(), payloads.end());
    return out;
  }
};

/// A source cache with three entries on two devices, its bundle, and an import target that
/// already holds one entry of its own.
struct Fixture {
  TempDir root{"bundle-"};
  std::filesystem::path src = root.path / "src", dst = root.path / "dst", file = root.path / "cache.vgb";
  DeviceFingerprint here = test::fingerprint("backend=test;device=here;"),
                    there = test::fingerprint("backend=test;device=there;");
  cache::KernelKey k_spirv{0x1111, 0x2222}, k_cubin{0x3333, 0x4444},
      k_vkpc{cache::hash64("vk-pipeline-cache"), there.hash}, k_own{0x5555, 0x6666};
  std::vector<std::uint8_t> spirv = valid_spirv(600, 1), cubin = vgpu_test::payload_for(EntryKind::cuda_binary, 300, 2),
                            vkpc = vgpu_test::payload_for(EntryKind::vk_pipeline_cache, 64, 3);

  Fixture() {
    cache::DiskStore s(test::options_for(src));
    REQUIRE(s.store(EntryKind::spirv, k_spirv, here, spirv, 100));
    REQUIRE(s.store(EntryKind::cuda_binary, k_cubin, there, cubin, 200));
    REQUIRE(s.store(EntryKind::vk_pipeline_cache, k_vkpc, there, vkpc, 300));
    const CacheBundleReport r = export_cache_bundle(src, file);
    REQUIRE(r.exported == 3);
    REQUIRE(r.skipped == 0);
    cache::DiskStore d(test::options_for(dst));
    REQUIRE(d.store(EntryKind::spirv, k_own, here, valid_spirv(500, 9), 50));
  }
  CacheBundleReport import(const std::filesystem::path& bundle) {
    return import_cache_bundle(bundle, dst, std::vector<DeviceFingerprint>{here});
  }
  /// Writes bytes as a bundle file of its own and imports it.
  CacheBundleReport import_bytes(const std::vector<std::uint8_t>& bytes) {
    const auto p = root.path / "hostile.vgb";
    test::write_bytes(p, bytes);
    return import(p);
  }
};

const CacheBundleEntry& only_entry(const CacheBundleReport& r, const std::string& status) {
  const CacheBundleEntry* found = nullptr;
  for (const auto& e : r.entries)
    if (e.status == status) found = &e;
  REQUIRE(found != nullptr);
  return *found;
}

/// Checks that importing bytes throws a vgpu::Error naming what and a Fix, and changes nothing.
void expect_refused(Fixture& f, const std::vector<std::uint8_t>& bytes, const std::string& what) {
  const auto before = snapshot(f.dst);
  try {
    f.import_bytes(bytes);
    FAIL("the import of a bad bundle (" << what << ") did not throw");
  } catch (const Error& e) {
    INFO(e.what());
    CHECK(std::string(e.what()).find(what) != std::string::npos);
    CHECK(std::string(e.what()).find("Fix:") != std::string::npos);
  }
  CHECK(snapshot(f.dst) == before);
}

}  // namespace

TEST_CASE("bundle: a round trip keeps every entry, kind and fingerprint") {
  Fixture f;
  const CacheBundleReport r = f.import(f.file);
  CHECK(r.imported == 3);
  CHECK(r.rejected == 0);
  CHECK(r.other_fingerprint_entries == 2);  // the cubin and the pipeline cache are "there"'s
  CHECK(r.fingerprints.size() == 2);
  cache::DiskStore d(test::options_for(f.dst));
  CHECK(d.load(EntryKind::spirv, f.k_spirv, f.here) == f.spirv);
  CHECK(d.load(EntryKind::cuda_binary, f.k_cubin, f.there) == f.cubin);
  CHECK(d.load(EntryKind::vk_pipeline_cache, f.k_vkpc, f.there) == f.vkpc);
  CHECK(d.load(EntryKind::spirv, f.k_own, f.here).has_value());  // the target's own entry survives
  // Again: everything is already there, with the same bytes.
  const CacheBundleReport again = f.import(f.file);
  CHECK(again.present == 3);
  CHECK(again.imported == 0);
}

TEST_CASE("bundle: an entry of another device is kept and never used by this one") {
  Fixture f;
  f.import(f.file);
  cache::DiskStore d(test::options_for(f.dst));
  // This machine's lookups use its own fingerprint, so its keys differ: a miss, and the other
  // device's entry stays on disk untouched for the machine it fits.
  cache::LoadOutcome outcome{};
  CHECK_FALSE(d.load(EntryKind::cuda_binary, cache::KernelKey{0x3333, 0x4445}, f.here, &outcome));
  CHECK(outcome == cache::LoadOutcome::missing);
  bool kept = false;
  for (const auto& e : d.list(true))
    if (e.kind == EntryKind::cuda_binary && e.key_hex == f.k_cubin.hex())
      kept = e.valid && e.fingerprint_text == f.there.text;
  CHECK(kept);
  CHECK(d.stats().rejected.empty());
}

TEST_CASE("bundle: truncated, wrong magic, newer version and damaged manifests are errors that change nothing") {
  Fixture f;
  const auto bytes = test::read_bytes(f.file);
  for (std::size_t keep : {std::size_t{0}, std::size_t{5}, std::size_t{20}, std::size_t{40}, bytes.size() - 1}) {
    INFO("truncated to " << keep << " of " << bytes.size() << " bytes");
    expect_refused(f, std::vector<std::uint8_t>(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(keep)),
                   "truncated");
  }
  auto magic = bytes;
  magic[0] = 'X';
  expect_refused(f, magic, "magic");
  Parts newer = Parts::of(bytes);
  newer.version = kCacheBundleVersion + 1;
  expect_refused(f, newer.seal(), "newer");
  CHECK_THROWS_MATCHES(
      f.import_bytes(newer.seal()), Error,
      Catch::Matchers::Predicate<Error>([](const Error& e) { return e.category() == ErrorCategory::not_supported; },
                                        "category not_supported"));
  auto flipped_manifest = bytes;
  flipped_manifest[40] ^= 0x01;
  expect_refused(f, flipped_manifest, "manifest checksum");
  auto extra = bytes;
  extra.push_back(0);
  expect_refused(f, extra, "after the last payload");
}

TEST_CASE("bundle: a manifest field missing or of the wrong JSON type is invalid_argument, never another exception") {
  // A hostile tool reseals the manifest, so only the reader's typed checks stand between these
  // values and nlohmann's type_error; expect_refused fails on any exception but vgpu::Error.
  Fixture f;
  const Parts good = Parts::of(test::read_bytes(f.file));
  const std::vector<std::pair<std::string, std::function<void(nlohmann::json&)>>> edits = {
      {"\"format\" is null", [](nlohmann::json& m) { m["format"] = nullptr; }},
      {"\"format\" is an unsigned integer", [](nlohmann::json& m) { m["format"] = 0; }},
      {"\"format\" is an array", [](nlohmann::json& m) { m["format"] = nlohmann::json::array(); }},
      {"has no \"format\"", [](nlohmann::json& m) { m.erase("format"); }},
      {"\"format\" is not \"vgpu-cache-bundle\"", [](nlohmann::json& m) { m["format"] = "vgpu-cache-bundle2"; }},
      {"\"bundle_version\" is a string", [](nlohmann::json& m) { m["bundle_version"] = "1"; }},
      {"\"bundle_version\" is not the header's", [](nlohmann::json& m) { m["bundle_version"] = 7; }},
      {"\"cache_format\" is a negative integer", [](nlohmann::json& m) { m["cache_format"] = -1; }},
      {"has no \"cache_format\"", [](nlohmann::json& m) { m.erase("cache_format"); }},
      {"\"vgpu_version\" is a boolean", [](nlohmann::json& m) { m["vgpu_version"] = true; }},
      {"\"entries\" is an object", [](nlohmann::json& m) { m["entries"] = nlohmann::json::object(); }},
      {"manifest entry 1 is null", [](nlohmann::json& m) { m["entries"][1] = nullptr; }},
      {"\"size\" is a string", [](nlohmann::json& m) { m["entries"][0]["size"] = "600"; }},
      {"\"size\" is a number", [](nlohmann::json& m) { m["entries"][0]["size"] = 1.5; }},
      {"\"cost_us\" is a negative integer", [](nlohmann::json& m) { m["entries"][2]["cost_us"] = -3; }},
      {"\"kind\" is an unsigned integer", [](nlohmann::json& m) { m["entries"][0]["kind"] = 1; }},
      {"has no \"xxh3\"", [](nlohmann::json& m) { m["entries"][1].erase("xxh3"); }},
      {"\"label\" is an unsigned integer", [](nlohmann::json& m) { m["entries"][1]["label"] = 7; }},
      {"\"label\" is null", [](nlohmann::json& m) { m["entries"][0]["label"] = nullptr; }},
      {"\"fingerprint_text\" is an object",
       [](nlohmann::json& m) {
         m["entries"][0]["fingerprint_text"] = {{"a", 1}};
       }},
      {"its manifest is an array",
       [](nlohmann::json& m) {
         m = nlohmann::json::array({1, 2});
       }},
  };
  for (const auto& [what, edit] : edits) {
    INFO(what);
    Parts p = good;
    edit(p.manifest);
    expect_refused(f, p.seal(), what);
    try {
      f.import_bytes(p.seal());
    } catch (const Error& e) {
      CHECK(e.category() == ErrorCategory::invalid_argument);
    }
  }
}

TEST_CASE("bundle: an entry's label (cache format 2) goes into the manifest and comes back on import") {
  Fixture f;
  cache::DiskStore s(test::options_for(f.src));
  REQUIRE(s.store(EntryKind::spirv, f.k_spirv, f.here, f.spirv, 100, "scale_add"));
  REQUIRE(export_cache_bundle(f.src, f.file).exported == 3);
  const Parts parts = Parts::of(test::read_bytes(f.file));
  CHECK(parts.manifest["cache_format"] == kCacheFormatVersion);
  std::map<std::string, std::string> labels;  // key -> label, as the manifest has them
  for (const auto& e : parts.manifest["entries"]) labels[e["key"].get<std::string>()] = e["label"].get<std::string>();
  CHECK(labels[f.k_spirv.hex()] == "scale_add");
  CHECK(labels[f.k_cubin.hex()].empty());  // stored without one
  CHECK(f.import(f.file).imported == 3);
  cache::DiskStore d(test::options_for(f.dst));
  std::map<std::string, std::string> imported;
  for (const auto& e : d.list(true)) imported[e.key_hex] = e.label;
  CHECK(imported[f.k_spirv.hex()] == "scale_add");
  CHECK(imported[f.k_cubin.hex()].empty());
}

TEST_CASE("bundle: a manifest entry without a label imports unlabelled, one past the cap is rejected alone") {
  Fixture f;
  Parts p = Parts::of(test::read_bytes(f.file));
  p.manifest["entries"][0].erase("label");
  p.manifest["entries"][1]["label"] = std::string(cache::kMaxLabelBytes + 1, 'x');
  const CacheBundleReport r = f.import_bytes(p.seal());
  CHECK(r.imported == 2);
  CHECK(r.rejected == 1);
  CHECK_THAT(only_entry(r, "rejected").reason, Catch::Matchers::StartsWith("size: label longer than 1024 bytes"));
  CHECK_THAT(only_entry(r, "rejected").reason, Catch::Matchers::ContainsSubstring("Fix:"));
}

TEST_CASE("bundle: export leaves out an entry whose fingerprint text is not UTF-8, and exports the rest") {
  // A manifest is JSON, which holds only UTF-8; such an entry (a driver's name in another
  // encoding, a hand-made entry) used to make the export throw nlohmann's type_error.
  Fixture f;
  cache::DiskStore s(test::options_for(f.src));
  const DeviceFingerprint latin1 = test::fingerprint("backend=test;device=caf\xe9;");
  REQUIRE(s.store(EntryKind::spirv, cache::KernelKey{0x7777, 0x8888}, latin1, valid_spirv(300, 5), 10));
  const CacheBundleReport r = export_cache_bundle(f.src, f.file);
  CHECK(r.exported == 3);
  CHECK(r.skipped == 1);
  CHECK_THAT(only_entry(r, "skipped").reason, Catch::Matchers::ContainsSubstring("not UTF-8"));
  CHECK(f.import(f.file).imported == 3);
}

TEST_CASE(
    "bundle: export never replaces what is not a regular file, keeps a replaced file's mode, and writes to a stream") {
  Fixture f;
  const auto& dir = f.root.path;
  const std::vector<std::uint8_t> other{'k', 'e', 'p', 't'};
  test::write_bytes(dir / "target", other);
  std::filesystem::create_symlink("target", dir / "link");
#if defined(_WIN32)
  const char* const kinds[] = {"link", "folder"};  // Windows has no FIFOs in folders
#else
  REQUIRE(::mkfifo((dir / "fifo").c_str(), 0644) == 0);
  const char* const kinds[] = {"link", "fifo", "folder"};
#endif
  std::filesystem::create_directory(dir / "folder");
  for (const char* name : kinds) {
    INFO(name);
    const auto before = std::filesystem::symlink_status(dir / name).type();
    try {
      export_cache_bundle(f.src, dir / name);
      FAIL("no error");
    } catch (const Error& e) {
      CHECK(e.category() == ErrorCategory::invalid_argument);
      CHECK_THAT(e.what(), Catch::Matchers::ContainsSubstring("not a regular file"));
      CHECK_THAT(e.what(), Catch::Matchers::ContainsSubstring("Fix:"));
    }
    CHECK(std::filesystem::symlink_status(dir / name).type() == before);
  }
  CHECK(test::read_bytes(dir / "target") == other);

  // A replaced file keeps its permission bits.
  std::filesystem::permissions(dir / "target", std::filesystem::perms::owner_read |
                                                   std::filesystem::perms::owner_write |
                                                   std::filesystem::perms::others_read);
  CHECK(export_cache_bundle(f.src, dir / "target").exported == 3);
  CHECK(
      (std::filesystem::status(dir / "target").permissions() & std::filesystem::perms::all) ==
      (std::filesystem::perms::owner_read | std::filesystem::perms::owner_write | std::filesystem::perms::others_read));
  CHECK(test::read_bytes(dir / "target") == test::read_bytes(f.file));
  for (const auto& e : std::filesystem::directory_iterator(dir))
    CHECK(e.path().filename().string().find(".tmp-") == std::string::npos);

  // A stream gets the same bytes; a failing one is an io error.
  std::ostringstream out;
  const CacheBundleReport r = export_cache_bundle(f.src, out);
  CHECK(r.bundle == "-");
  const std::string text = out.str();
  CHECK(std::vector<std::uint8_t>(text.begin(), text.end()) == test::read_bytes(f.file));
  std::ostringstream broken;
  broken.setstate(std::ios::badbit);
  try {
    export_cache_bundle(f.src, broken);
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.category() == ErrorCategory::io);
    CHECK_THAT(e.what(), Catch::Matchers::ContainsSubstring("Fix:"));
  }
}

TEST_CASE("bundle: a huge declared size is refused before anything is allocated") {
  Fixture f;
  Parts p = Parts::of(test::read_bytes(f.file));
  p.manifest["entries"][0]["size"] = std::uint64_t{1} << 62;
  expect_refused(f, p.seal(), "more than the limit");
  Parts many = Parts::of(test::read_bytes(f.file));
  CacheBundleLimits small;
  small.max_entries = 2;
  test::write_bytes(f.root.path / "many.vgb", many.seal());
  CHECK_THROWS_AS(import_cache_bundle(f.root.path / "many.vgb", f.dst, std::vector<DeviceFingerprint>{}, small), Error);
}

TEST_CASE("bundle: damaged, resealed or path-unsafe entries are rejected one by one") {
  Fixture f;
  const auto bytes = test::read_bytes(f.file);
  const auto before = snapshot(f.dst);
  SECTION("a bit flipped in a payload") {
    auto flipped = bytes;
    flipped[flipped.size() - 10] ^= 0x20;  // inside the last payload
    const CacheBundleReport r = f.import_bytes(flipped);
    CHECK(r.rejected == 1);
    CHECK(r.imported == 2);
    CHECK(only_entry(r, "rejected").reason.rfind("checksum", 0) == 0);
  }
  SECTION("a manifest checksum that does not match its payload") {
    Parts p = Parts::of(bytes);
    for (auto& e : p.manifest["entries"]) e["xxh3"] = "0123456789abcdef";
    const CacheBundleReport r = f.import_bytes(p.seal());
    CHECK(r.rejected == 3);
    CHECK(snapshot(f.dst) == before);
  }
  SECTION("a payload damaged before it was checksummed (resealed)") {
    Parts p = Parts::of(bytes);
    std::size_t at = 0, index = 0;  // the SPIR-V entry's payload offset and manifest index
    while (p.manifest["entries"][index]["kind"] != "spirv")
      at += p.manifest["entries"][index++]["size"].get<std::size_t>();
    const std::size_t spirv_bytes = p.manifest["entries"][index]["size"].get<std::size_t>();
    const auto begin = p.payloads.begin() + static_cast<std::ptrdiff_t>(at);
    std::fill(begin, begin + static_cast<std::ptrdiff_t>(spirv_bytes), 0x41);
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx",
                  static_cast<unsigned long long>(cache::hash64(
                      std::string_view(reinterpret_cast<const char*>(p.payloads.data() + at), spirv_bytes))));
    p.manifest["entries"][index]["xxh3"] = std::string(hex);
    const CacheBundleReport r = f.import_bytes(p.seal());
    CHECK(r.rejected == 1);
    CHECK(only_entry(r, "rejected").reason.rfind("invalid", 0) == 0);
  }
  SECTION("path traversal in a key, an unknown kind, a fingerprint that does not match its text") {
    Parts p = Parts::of(bytes);
    p.manifest["entries"][0]["key"] = "../../../../../../tmp/vgpu-evil";
    p.manifest["entries"][1]["kind"] = "../select";
    p.manifest["entries"][2]["fingerprint_text"] = "backend=test;device=forged;";
    const CacheBundleReport r = f.import_bytes(p.seal());
    CHECK(r.rejected == 3);
    CHECK(r.entries[0].reason.rfind("name", 0) == 0);
    CHECK(r.entries[1].reason.find("kind") != std::string::npos);
    CHECK(r.entries[2].reason.rfind("fingerprint", 0) == 0);
    for (const auto& e : r.entries) CHECK(e.reason.find("Fix:") != std::string::npos);
    CHECK(snapshot(f.dst) == before);
    CHECK_FALSE(std::filesystem::exists("/tmp/vgpu-evil.vgc"));
  }
  SECTION("an entry already there with a different payload is not overwritten") {
    cache::DiskStore d(test::options_for(f.dst));
    const auto mine = valid_spirv(700, 42);
    REQUIRE(d.store(EntryKind::spirv, f.k_spirv, f.here, mine, 1));
    const CacheBundleReport r = f.import(f.file);
    CHECK(r.rejected == 1);
    CHECK(only_entry(r, "rejected").reason.rfind("conflict", 0) == 0);
    CHECK(d.load(EntryKind::spirv, f.k_spirv, f.here) == mine);
  }
}

TEST_CASE("bundle: exporting a directory that does not exist is an error with a Fix") {
  TempDir root("bundle-missing-");
  try {
    export_cache_bundle(root.path / "absent", root.path / "out.vgb");
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("Fix:") != std::string::npos);
  }
  CHECK_FALSE(std::filesystem::exists(root.path / "out.vgb"));
}

TEST_CASE("bundle: exporting a directory vgpu does not use is an error, not a bundle of skipped entries") {
  // A symlinked format folder makes the store refuse the directory (a hostile or foreign layout);
  // the same path is taken for an unwritable one, which a root test process cannot make.
  TempDir root("bundle-unusable-");
  std::filesystem::create_directories(root.path / "elsewhere");
  std::filesystem::create_directories(root.path / "cache");
  std::filesystem::create_directory_symlink(root.path / "elsewhere",
                                            root.path / "cache" / ("v" + std::to_string(kCacheFormatVersion)));
  try {
    export_cache_bundle(root.path / "cache", root.path / "out.vgb");
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.category() == ErrorCategory::io);
    CHECK(std::string(e.what()).find("cannot be exported") != std::string::npos);
    CHECK(std::string(e.what()).find("Fix:") != std::string::npos);
  }
  CHECK_FALSE(std::filesystem::exists(root.path / "out.vgb"));
}
