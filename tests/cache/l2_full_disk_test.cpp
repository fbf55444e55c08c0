// SPDX-License-Identifier: Apache-2.0
// tests/cache/l2_full_disk_test.cpp — part of vgpu-test-l2-store: a store on a full disk (ENOSPC)
// evicts the least valuable entries to make room and writes once more; a disk that stays full
// costs one eviction and one warning, never a drained cache (docs/cache-format.md, "A full
// disk"). The disk is simulated: the store's write-fault hook (cache/src/disk_store_fs.hpp)
// answers ENOSPC when the entry files under the cache would exceed a capacity the test sets.
#include <cerrno>
#include <cstdint>
#include <filesystem>
#include <string>
#include <system_error>

#include "disk_store_fs.hpp"
#include "support/cache_fixtures.hpp"
#include "support/capture_stderr.hpp"
#include "support/catch.hpp"
#include "support/valid_payloads.hpp"
#include "vgpu/cache/disk_store.hpp"

namespace {

namespace fs = std::filesystem;
using vgpu::cache::DiskStore;
using vgpu::cache::EntryKind;
using vgpu::cache::KernelKey;

/// The simulated disk: the cache directory and how many bytes of files it can hold.
struct Disk {
  fs::path root;
  std::uint64_t capacity = 0;
  bool always_full = false;
};
Disk g_disk;

/// The bytes of every regular file under the simulated disk's root.
std::uint64_t used() {
  std::uint64_t n = 0;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(g_disk.root, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec))
    if (it->is_regular_file(ec)) n += it->file_size(ec);
  return n;
}

/// The write-fault hook: ENOSPC when the entry would not fit.
int full_disk(const fs::path&, std::uint64_t bytes) {
  return g_disk.always_full || used() + bytes > g_disk.capacity ? ENOSPC : 0;
}

/// Installs the simulated disk for one test; removes it again.
struct SimulatedDisk {
  explicit SimulatedDisk(const fs::path& root) {
    g_disk = Disk{root, UINT64_MAX, false};
    vgpu::cache::detail::set_write_fault(full_disk);
  }
  ~SimulatedDisk() { vgpu::cache::detail::set_write_fault(nullptr); }
  SimulatedDisk(const SimulatedDisk&) = delete;
  SimulatedDisk& operator=(const SimulatedDisk&) = delete;
};

const vgpu::DeviceFingerprint kDevice = vgpu::test::fingerprint("backend=test;device=full-disk;");

std::vector<std::uint8_t> payload(std::uint32_t seed) {
  return vgpu_test::payload_for(EntryKind::cuda_binary, 1000, seed);
}

bool has(DiskStore& store, std::uint64_t key) {
  return store.load(EntryKind::cuda_binary, KernelKey{0xd15c, key}, kDevice).has_value();
}

}  // namespace

TEST_CASE("a store on a full disk evicts the least valuable entries and writes once more", "[l2][full-disk]") {
  vgpu::test::TempDir t("l2-full-");
  const fs::path dir = t.path / "cache";
  SimulatedDisk disk(dir);
  DiskStore store(vgpu::test::options_for(dir, 1ull << 30));  // a cap far above the disk: the disk fills first
  // Three entries of 1000 bytes; the cheapest to rebuild (cost 100) is the one to go.
  for (std::uint64_t i = 1; i <= 3; ++i)
    REQUIRE(store.store(EntryKind::cuda_binary, KernelKey{0xd15c, i}, kDevice, payload(i), i == 1 ? 100 : 1000 * i));
  const std::uint64_t three = used();
  g_disk.capacity = three + three / 6;  // no room for a fourth

  CHECK(store.store(EntryKind::cuda_binary, KernelKey{0xd15c, 4}, kDevice, payload(4), 4000));
  const auto stats = store.stats();
  CHECK(stats.writes == 4);
  CHECK(stats.write_failures == 0);
  CHECK(stats.evictions == 1);  // one entry's room was enough
  CHECK_FALSE(has(store, 1));
  CHECK(has(store, 2));
  CHECK(has(store, 3));
  CHECK(has(store, 4));
  CHECK(used() <= g_disk.capacity);
  for (const auto& e : fs::recursive_directory_iterator(dir))
    CHECK(e.path().filename().string().rfind(".tmp-", 0) != 0);  // no temp file left
}

TEST_CASE("a disk that stays full costs one eviction and one warning, never a drained cache", "[l2][full-disk]") {
  vgpu::test::TempDir t("l2-full-");
  const fs::path dir = t.path / "cache";
  SimulatedDisk disk(dir);
  DiskStore store(vgpu::test::options_for(dir, 1ull << 30));
  for (std::uint64_t i = 1; i <= 4; ++i)
    REQUIRE(store.store(EntryKind::cuda_binary, KernelKey{0xd15c, i}, kDevice, payload(i), 1000 * i));
  g_disk.always_full = true;  // something else takes every byte freed

  const std::string err = vgpu_test::stderr_of([&] {
    CHECK_FALSE(store.store(EntryKind::cuda_binary, KernelKey{0xd15c, 5}, kDevice, payload(5), 5000));
    CHECK(store.stats().evictions == 1);  // room for one entry was made, and taken by someone else
    for (std::uint64_t i = 6; i <= 8; ++i)
      CHECK_FALSE(store.store(EntryKind::cuda_binary, KernelKey{0xd15c, i}, kDevice, payload(i), 1000 * i));
  });
  const auto stats = store.stats();
  CHECK(stats.write_failures == 4);
  CHECK(stats.evictions == 1);  // later stores evict nothing more: the cache is not drained
  CHECK_FALSE(has(store, 1));
  for (std::uint64_t i = 2; i <= 4; ++i) CHECK(has(store, i));
  if (const char* level = std::getenv("VGPU_LOG");
      level && (std::string(level) == "error" || std::string(level) == "quiet")) {
    WARN("VGPU_LOG=" << level << " hides the warning this test reads");
    return;
  }
  INFO(err);
  std::size_t warnings = 0;
  for (auto at = err.find("vgpu: warning:"); at != std::string::npos; at = err.find("vgpu: warning:", at + 1))
    ++warnings;
  CHECK(warnings == 1);
  CHECK_THAT(err, Catch::Matchers::ContainsSubstring("No space left on device (also after evicting older entries"));
  CHECK_THAT(err, Catch::Matchers::ContainsSubstring("Fix: free space"));
}
