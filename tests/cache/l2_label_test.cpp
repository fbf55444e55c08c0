// SPDX-License-Identifier: Apache-2.0
// tests/cache/l2_label_test.cpp — the label of cache format 2 (docs/cache-format.md, "Entry file"):
// it round-trips through store, load and list at the documented offsets, a longer one is cut to
// kMaxLabelBytes at a UTF-8 character boundary, and a header whose label length is past the cap
// ("size"), that ends inside the label or its length ("truncated") or whose label changed
// after it was sealed ("header") is rejected by load and reported by list. Part of
// vgpu-test-l2-store.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "support/cache_fixtures.hpp"
#include "support/catch.hpp"
#include "vgpu/cache/disk_store.hpp"
#include "vgpu/version.hpp"

// The cache tests' vocabulary (fs, Bytes, DiskStore, EntryKind, KernelKey, options_for, TempDir …)
// comes from support/cache_fixtures.hpp's vgpu_test namespace.
using namespace vgpu_test;

namespace {

using vgpu::cache::kMaxLabelBytes;
using vgpu::test::read_bytes;
using vgpu::test::write_bytes;
using Reasons = std::map<std::string, std::uint64_t>;

const DeviceFingerprint kDevice = vgpu::test::fingerprint("backend=test;model=label;vgpu_cache_format=2");
constexpr KernelKey kKey{0x0a0b0c0d0e0f1011ull, 0x1213141516171819ull};
// Random bytes pass the payload check only as a GL program binary (l2_store_test.cpp says why).
constexpr EntryKind kAnyBytes = EntryKind::gl_program_binary;
const Bytes kPayload = [] {
  Bytes b(300);
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<std::uint8_t>(i * 7 + 1);
  return b;
}();

fs::path entry_path(const fs::path& dir, const KernelKey& key) {
  return dir / ("v" + std::to_string(vgpu::kCacheFormatVersion)) / std::string(vgpu::cache::to_string(kAnyBytes)) /
         (key.hex() + ".vgc");
}

std::uint32_t get32(const Bytes& b, std::size_t at) {
  return static_cast<std::uint32_t>(b[at]) | static_cast<std::uint32_t>(b[at + 1]) << 8 |
         static_cast<std::uint32_t>(b[at + 2]) << 16 | static_cast<std::uint32_t>(b[at + 3]) << 24;
}

void put32(Bytes& b, std::size_t at, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) b[at + static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(v >> (8 * i));
}

/// The offset of the label length: 44 + the fingerprint text (docs/cache-format.md).
const std::size_t kLabelLengthAt = 44 + kDevice.text.size();

/// Returns the label list() reports for the one entry in dir ("<invalid: problem>" when invalid).
std::string listed_label(const fs::path& dir) {
  const DiskStore store(options_for(dir));
  const auto all = store.list(true);
  REQUIRE(all.size() == 1);
  return all[0].valid ? all[0].label : "<invalid: " + all[0].problem + ">";
}

/// Stores a labelled entry in a fresh directory, applies damage to its file, and checks that
/// list() reports it invalid with reason and that load() rejects it as reason and deletes it.
void expect_rejected(const std::string& reason, const std::function<void(Bytes&)>& damage) {
  TempDir t("l2-label-");
  DiskStore store(options_for(t.path));
  REQUIRE(store.store(kAnyBytes, kKey, kDevice, kPayload, 10, "scale_add"));
  const fs::path file = entry_path(t.path, kKey);
  Bytes b = read_bytes(file);
  damage(b);
  write_bytes(file, b);
  CHECK_THAT(listed_label(t.path), Catch::Matchers::StartsWith("<invalid: " + reason + ":"));
  CHECK_FALSE(store.load(kAnyBytes, kKey, kDevice));
  CHECK(store.stats().rejected == Reasons{{reason, 1}});
  CHECK_FALSE(fs::exists(file));
}

}  // namespace

TEST_CASE("label: stored in the header at the documented offsets and listed", "[l2][label]") {
  TempDir t("l2-label-");
  DiskStore store(options_for(t.path));
  REQUIRE(store.store(kAnyBytes, kKey, kDevice, kPayload, 10, "scale_add"));
  const Bytes b = read_bytes(entry_path(t.path, kKey));
  // 80 + F + L + P bytes; the label length at 44 + F, the label right after it.
  CHECK(b.size() == 80 + kDevice.text.size() + 9 + kPayload.size());
  CHECK(get32(b, 8) == 2);  // the format version
  CHECK(get32(b, kLabelLengthAt) == 9);
  CHECK(std::string(b.begin() + static_cast<std::ptrdiff_t>(kLabelLengthAt + 4),
                    b.begin() + static_cast<std::ptrdiff_t>(kLabelLengthAt + 13)) == "scale_add");
  CHECK(store.load(kAnyBytes, kKey, kDevice) == kPayload);  // the label changes nothing a load checks
  CHECK(listed_label(t.path) == "scale_add");

  // A store without a label writes length 0; a new label replaces the old with the entry.
  REQUIRE(store.store(kAnyBytes, kKey, kDevice, kPayload, 10));
  CHECK(get32(read_bytes(entry_path(t.path, kKey)), kLabelLengthAt) == 0);
  CHECK(listed_label(t.path).empty());
  REQUIRE(store.store(kAnyBytes, kKey, kDevice, kPayload, 10, "selection: matmul class 18"));
  CHECK(listed_label(t.path) == "selection: matmul class 18");
  CHECK(store.load(kAnyBytes, kKey, kDevice) == kPayload);
}

TEST_CASE("label: a longer one is cut to the cap at a UTF-8 character boundary", "[l2][label]") {
  TempDir t("l2-label-");
  DiskStore store(options_for(t.path));
  SECTION("ASCII") {
    REQUIRE(store.store(kAnyBytes, kKey, kDevice, kPayload, 10, std::string(2000, 'k')));
    CHECK(listed_label(t.path) == std::string(kMaxLabelBytes, 'k'));
  }
  SECTION("a two-byte character across the cap is left out whole") {
    const std::string label = std::string(kMaxLabelBytes - 1, 'k') + "\xc3\xa9" + "tail";  // é at 1023..1024
    REQUIRE(store.store(kAnyBytes, kKey, kDevice, kPayload, 10, label));
    CHECK(listed_label(t.path) == std::string(kMaxLabelBytes - 1, 'k'));
  }
  SECTION("exactly the cap is kept") {
    const std::string label = std::string(kMaxLabelBytes - 2, 'k') + "\xc3\xa9";
    REQUIRE(store.store(kAnyBytes, kKey, kDevice, kPayload, 10, label));
    CHECK(listed_label(t.path) == label);
  }
  CHECK(store.load(kAnyBytes, kKey, kDevice) == kPayload);
}

TEST_CASE("label: a length past the cap is rejected as size", "[l2][label][corrupt]") {
  // Checked before the header checksum, so no resealing is needed to reach it.
  expect_rejected("size", [](Bytes& b) { put32(b, kLabelLengthAt, kMaxLabelBytes + 1); });
  expect_rejected("size", [](Bytes& b) { put32(b, kLabelLengthAt, 0xffffffffu); });
}

TEST_CASE("label: a file that ends inside the label or its length is rejected as truncated", "[l2][label][corrupt]") {
  expect_rejected("truncated", [](Bytes& b) { b.resize(kLabelLengthAt + 2); });          // inside the length
  expect_rejected("truncated", [](Bytes& b) { b.resize(kLabelLengthAt + 4 + 5); });      // inside the label
  expect_rejected("truncated", [](Bytes& b) { b.resize(kLabelLengthAt + 4 + 9 + 8); });  // after it, inside the rest
}

TEST_CASE("label: a changed label byte or length is caught by the header checksum", "[l2][label][corrupt]") {
  expect_rejected("header", [](Bytes& b) { b[kLabelLengthAt + 4] ^= 0x20; });  // "Scale_add"
  // A shorter length moves the suffix: the header checksum is read from elsewhere.
  expect_rejected("header", [](Bytes& b) { put32(b, kLabelLengthAt, 8); });
}
