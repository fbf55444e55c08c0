// SPDX-License-Identifier: Apache-2.0
// tests/cache/l2_store_test.cpp — the L2 disk store: round trips (same instance, new instance, another
// process), every kind of damaged or foreign entry (rejected with its reason and deleted),
// unusable and disabled directories, the size cap's cost-aware eviction, eight processes
// racing on one key, threads loading and storing at once, maintenance (list, remove_invalid,
// clear) and the vgpu-probe cache subcommand. Every test works in its own mkdtemp directory.
#if !defined(_WIN32)
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#endif

#include <algorithm>
#include <atomic>
#include <chrono>
#include "support/catch.hpp"
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "support/cache_fixtures.hpp"
#include "support/helper_path.hpp"
#include "support/scoped_env.hpp"
#include "vgpu/cache/disk_store.hpp"
#include "vgpu/version.hpp"

#ifndef VGPU_L2_WRITER
#error "VGPU_L2_WRITER (path of vgpu-l2-writer) must be defined by the build"
#endif
#ifndef VGPU_PROBE
#error "VGPU_PROBE (path of vgpu-probe) must be defined by the build"
#endif
#ifndef VGPU_TEST_TMP_ROOT
#error "VGPU_TEST_TMP_ROOT must be defined by the build"
#endif

namespace vgpu_test {
namespace {

using vgpu::cache::DiskStoreOptions;
using vgpu::test::fingerprint;
using vgpu::test::read_bytes;
using vgpu::test::run_command;
using vgpu::test::write_bytes;
using Reasons = std::map<std::string, std::uint64_t>;

const DeviceFingerprint kDevice = fingerprint("backend=test;model=l2;vgpu_cache_format=2");
const DeviceFingerprint kOtherDevice = fingerprint("backend=test;model=other;vgpu_cache_format=2");
constexpr KernelKey kKey{0x0123456789abcdefull, 0xfedcba9876543210ull};
constexpr KernelKey kKey2{0x1111111111111111ull, 0x2222222222222222ull};

// The store checks each payload for its kind before handing it out (vgpu/cache/payload_check.hpp:
// SPIR-V must pass SPIRV-Tools' validator, a CUDA image must be ELF or NUL-terminated PTX, ...).
// Random bytes pass only as a GL program binary (a format word and at least one byte, the rest
// is the driver's to check), so the tests of the format, the directory and eviction store them
// as that kind; tests/cache/l2_payload_test.cpp covers the payload checks themselves.
constexpr EntryKind kAnyBytes = EntryKind::gl_program_binary;

Bytes make_payload(std::size_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  Bytes b(n);
  for (auto& x : b) x = static_cast<std::uint8_t>(rng());
  return b;
}

/// n ≥ 32 bytes of VkPipelineCache data: a version-one header (headerSize 32), then noise.
Bytes pipeline_cache_payload(std::size_t n, std::uint32_t seed) {
  Bytes b = make_payload(n, seed);
  const std::uint8_t header[8] = {32, 0, 0, 0, 1, 0, 0, 0};
  std::copy(header, header + 8, b.begin());
  return b;
}

/// The documented location of an entry (docs/cache-format.md).
fs::path entry_path(const fs::path& dir, EntryKind kind, const KernelKey& key) {
  return dir / ("v" + std::to_string(vgpu::kCacheFormatVersion)) / std::string(vgpu::cache::to_string(kind)) /
         (key.hex() + ".vgc");
}

/// Header bytes of an entry written for fp without a label (docs/cache-format.md: 44 + text +
/// 4 (the label length) + 0 (the label) + 32).
std::size_t header_bytes(const DeviceFingerprint& fp) { return 44 + fp.text.size() + 4 + 32; }

/// An environment prefix that points vgpu at dir with no other cache settings.
std::string cache_env(const fs::path& dir) {
  return "env -u VGPU_CACHE_DISABLE -u VGPU_CACHE_MAX_BYTES VGPU_LOG=warn VGPU_CACHE_DIR=" + quoted(dir.string()) + " ";
}

std::uint64_t bytes_on_disk(const fs::path& dir) {
  std::uint64_t total = 0;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (it->is_regular_file()) total += it->file_size();
  return total;
}

std::size_t files_named(const fs::path& dir, const std::string& prefix) {
  std::size_t n = 0;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (it->is_regular_file() && it->path().filename().string().starts_with(prefix)) ++n;
  return n;
}

void set_mtime_ago(const fs::path& p, int seconds) {
#if defined(_WIN32)
  fs::last_write_time(p, fs::file_time_type::clock::now() - std::chrono::seconds(seconds));
#else
  timespec times[2];
  ::clock_gettime(CLOCK_REALTIME, &times[0]);
  times[0].tv_sec -= seconds;
  times[1] = times[0];
  REQUIRE(::utimensat(AT_FDCWD, p.c_str(), times, 0) == 0);
#endif
}

/// Whether permission bits keep this process out of a folder: not for root, and not on Windows,
/// where std::filesystem::permissions only sets the read-only attribute, which folders ignore.
bool permission_bits_bind() {
#if defined(_WIN32)
  return false;
#else
  return ::geteuid() != 0;
#endif
}

}  // namespace

TEST_CASE("round trip: a stored payload loads back byte for byte", "[l2]") {
  TempDir t("l2-");
  DiskStore store(options_for(t.path));
  REQUIRE(store.enabled());
  CHECK(store.directory() == t.path);
  const Bytes payload = make_payload(1000, 1);
  REQUIRE(store.store(kAnyBytes, kKey, kDevice, payload, 123));
  const auto got = store.load(kAnyBytes, kKey, kDevice);
  REQUIRE(got);
  CHECK(*got == payload);

  // The entry sits where the docs say, exactly header + payload long.
  const fs::path file = entry_path(t.path, kAnyBytes, kKey);
  REQUIRE(fs::exists(file));
  CHECK(fs::file_size(file) == header_bytes(kDevice) + payload.size());
  CHECK(read_bytes(file).size() == fs::file_size(file));
  CHECK(files_named(t.path, ".tmp-") == 0);

  // Another key or another kind of the same key is a miss, not a rejection.
  CHECK_FALSE(store.load(kAnyBytes, kKey2, kDevice));
  CHECK_FALSE(store.load(EntryKind::vk_pipeline_cache, kKey, kDevice));
  // An empty payload is a valid entry.
  REQUIRE(store.store(EntryKind::selection, kKey2, kDevice, {}, 5));
  const auto empty = store.load(EntryKind::selection, kKey2, kDevice);
  REQUIRE(empty);
  CHECK(empty->empty());

  const auto s = store.stats();
  CHECK(s.hits == 2);
  CHECK(s.misses == 2);
  CHECK(s.writes == 2);
  CHECK(s.write_failures == 0);
  CHECK(s.rejected.empty());

  const auto entries = store.list(true);
  REQUIRE(entries.size() == 2);
  const auto& entry = entries[0].kind == kAnyBytes ? entries[0] : entries[1];
  CHECK(entry.valid);
  CHECK(entry.problem.empty());
  CHECK(entry.key_hex == kKey.hex());
  CHECK(entry.payload_bytes == 1000);
  CHECK(entry.cost_us == 123);
  CHECK(entry.file_bytes == fs::file_size(file));
  CHECK(entry.fingerprint_text == kDevice.text);
  CHECK(entry.path == file);
}

TEST_CASE("kinds have distinct names and directories", "[l2]") {
  using vgpu::cache::to_string;
  CHECK(to_string(EntryKind::spirv) == "spirv");
  CHECK(to_string(EntryKind::vk_pipeline_cache) == "vkpc");
  CHECK(to_string(EntryKind::gl_program_binary) == "glbin");
  CHECK(to_string(EntryKind::cuda_binary) == "cubin");
  CHECK(to_string(EntryKind::selection) == "select");
}

TEST_CASE("a new DiskStore instance reads what an earlier one wrote, and a rewrite replaces it", "[l2]") {
  TempDir t("l2-");
  const Bytes first = make_payload(4096, 2), second = make_payload(3000, 3);
  {
    DiskStore a(options_for(t.path));
    REQUIRE(a.store(kAnyBytes, kKey, kDevice, first, 10));
  }
  DiskStore b(options_for(t.path));
  auto got = b.load(kAnyBytes, kKey, kDevice);
  REQUIRE(got);
  CHECK(*got == first);
  REQUIRE(b.store(kAnyBytes, kKey, kDevice, second, 10));
  DiskStore c(options_for(t.path));
  got = c.load(kAnyBytes, kKey, kDevice);
  REQUIRE(got);
  CHECK(*got == second);
  CHECK(c.list(true).size() == 1);
}

TEST_CASE("entries round trip through another process", "[l2][processes]") {
  TempDir t("l2-");
  const fs::path dir = t.path / "cache";
  const std::string writer = quoted(vgpu::test::helper_path(VGPU_L2_WRITER));

  // Written by the helper process, read here.
  const Bytes theirs = make_payload(70000, 4);
  write_bytes(t.path / "theirs.bin", theirs);
  const std::string write_cmd = writer + " write " + quoted(dir.string()) + " glbin " + kKey.hex() + " " +
                                quoted(kDevice.text) + " " + quoted((t.path / "theirs.bin").string()) + " 77";
  REQUIRE(std::system(write_cmd.c_str()) == 0);
  DiskStore store(options_for(dir));
  auto got = store.load(EntryKind::gl_program_binary, kKey, kDevice);
  REQUIRE(got);
  CHECK(*got == theirs);

  // Written here, read by the helper.
  const Bytes ours = make_payload(12345, 5);
  REQUIRE(store.store(kAnyBytes, kKey2, kDevice, ours, 9));
  const fs::path out = t.path / "out.bin";
  const std::string read_cmd = writer + " read " + quoted(dir.string()) + " glbin " + kKey2.hex() + " " +
                               quoted(kDevice.text) + " " + quoted(out.string());
  const int rc = std::system(read_cmd.c_str());
  REQUIRE(WIFEXITED(rc));
  REQUIRE(WEXITSTATUS(rc) == 0);
  CHECK(read_bytes(out) == ours);

  // The helper on another device misses (and drops the foreign entry).
  const std::string foreign_cmd = writer + " read " + quoted(dir.string()) + " glbin " + kKey2.hex() + " " +
                                  quoted(kOtherDevice.text) + " " + quoted(out.string());
  const int foreign = std::system(foreign_cmd.c_str());
  REQUIRE(WIFEXITED(foreign));
  CHECK(WEXITSTATUS(foreign) == 1);
  CHECK_FALSE(fs::exists(entry_path(dir, kAnyBytes, kKey2)));
}

// ---- damaged and foreign entries: each is rejected with its reason, deleted, and the
// ---- cache then works again for that key.

namespace {

/// Stores kKey (kAnyBytes, 5000 bytes) in a fresh store, lets damage() change the file, then
/// checks that a load is a miss counted under reason and that the file is gone.
void expect_rejected(const std::string& reason, const std::function<void(const fs::path&)>& damage,
                     const DeviceFingerprint& load_fp = kDevice, KernelKey load_key = kKey,
                     EntryKind load_kind = kAnyBytes) {
  TempDir t("l2-");
  DiskStore store(options_for(t.path));
  const Bytes payload = make_payload(5000, 6);
  REQUIRE(store.store(kAnyBytes, kKey, kDevice, payload, 50));
  const fs::path file = entry_path(t.path, kAnyBytes, kKey);
  damage(file);
  const fs::path loaded = entry_path(t.path, load_kind, load_key);
  REQUIRE(fs::exists(loaded));

  CHECK_FALSE(store.load(load_kind, load_key, load_fp));
  const auto s = store.stats();
  CHECK(s.rejected == Reasons{{reason, 1}});
  CHECK(s.misses == 1);
  CHECK(s.hits == 0);
  CHECK_FALSE(fs::exists(loaded));

  // The next load is a plain miss; a fresh store and load work.
  CHECK_FALSE(store.load(load_kind, load_key, load_fp));
  CHECK(store.stats().rejected == Reasons{{reason, 1}});
  REQUIRE(store.store(load_kind, load_key, load_fp, payload, 50));
  const auto again = store.load(load_kind, load_key, load_fp);
  REQUIRE(again);
  CHECK(*again == payload);
}

void modify(const fs::path& file, const std::function<void(Bytes&)>& change) {
  Bytes b = read_bytes(file);
  change(b);
  write_bytes(file, b);
}

}  // namespace

TEST_CASE("a corrupt payload byte is rejected as checksum and deleted", "[l2][corrupt]") {
  expect_rejected("checksum", [](const fs::path& f) { modify(f, [](Bytes& b) { b.back() ^= 0x5a; }); });
  expect_rejected("checksum",
                  [](const fs::path& f) { modify(f, [](Bytes& b) { b[header_bytes(kDevice) + 2500] ^= 0x01; }); });
}

TEST_CASE("a truncated entry is rejected as truncated", "[l2][corrupt]") {
  SECTION("inside the payload") {
    expect_rejected("truncated", [](const fs::path& f) { modify(f, [](Bytes& b) { b.resize(b.size() - 7); }); });
  }
  SECTION("inside the header") {
    expect_rejected("truncated", [](const fs::path& f) { modify(f, [](Bytes& b) { b.resize(30); }); });
  }
  SECTION("inside the magic") {
    expect_rejected("truncated", [](const fs::path& f) { modify(f, [](Bytes& b) { b.resize(5); }); });
  }
  SECTION("to zero bytes") {
    expect_rejected("truncated", [](const fs::path& f) { modify(f, [](Bytes& b) { b.clear(); }); });
  }
}

TEST_CASE("extra bytes after the payload are rejected as size", "[l2][corrupt]") {
  expect_rejected("size", [](const fs::path& f) { modify(f, [](Bytes& b) { b.push_back(0); }); });
}

TEST_CASE("a garbage file in an entry's place is rejected as magic", "[l2][corrupt]") {
  expect_rejected("magic", [](const fs::path& f) { write_bytes(f, make_payload(4096, 7)); });
  expect_rejected("magic", [](const fs::path& f) { write_bytes(f, Bytes{'h', 'i', '\n'}); });
}

TEST_CASE("a wrong magic is rejected as magic", "[l2][corrupt]") {
  expect_rejected("magic", [](const fs::path& f) { modify(f, [](Bytes& b) { b[0] = 'X'; }); });
}

TEST_CASE("another format version is rejected as version", "[l2][corrupt]") {
  expect_rejected("version", [](const fs::path& f) { modify(f, [](Bytes& b) { b[8] = 99; }); });
}

TEST_CASE("a damaged header field is rejected by the header checksum", "[l2][corrupt]") {
  // cost_us sits at 48 + text + label + 16 (docs/cache-format.md; no label here); nothing else checks it.
  expect_rejected("header",
                  [](const fs::path& f) { modify(f, [](Bytes& b) { b[48 + kDevice.text.size() + 16] ^= 0x10; }); });
}

TEST_CASE("an entry of another device is rejected as fingerprint", "[l2][corrupt]") {
  expect_rejected(
      "fingerprint", [](const fs::path&) {}, kOtherDevice);
}

TEST_CASE("an entry whose header holds another key (a renamed file) is rejected as key", "[l2][corrupt]") {
  expect_rejected(
      "key", [](const fs::path& f) { fs::rename(f, f.parent_path() / (kKey2.hex() + ".vgc")); }, kDevice, kKey2);
}

TEST_CASE("an entry of another kind in a kind's directory is rejected as kind", "[l2][corrupt]") {
  expect_rejected(
      "kind",
      [](const fs::path& f) {
        const fs::path other = f.parent_path().parent_path() / "select";
        fs::create_directories(other);
        fs::rename(f, other / f.filename());
      },
      kDevice, kKey, EntryKind::selection);
}

TEST_CASE("a directory in an entry's place is a counted miss, never a crash", "[l2][corrupt]") {
  TempDir t("l2-");
  DiskStore store(options_for(t.path));
  fs::create_directories(entry_path(t.path, kAnyBytes, kKey));
  CHECK_FALSE(store.load(kAnyBytes, kKey, kDevice));
  CHECK(store.stats().rejected == Reasons{{"type", 1}});
  CHECK_FALSE(store.store(kAnyBytes, kKey, kDevice, make_payload(10, 1), 1));  // rename onto a directory fails
  CHECK(store.stats().write_failures == 1);
  CHECK(files_named(t.path, ".tmp-") == 0);
}

TEST_CASE("reject() deletes an entry the driver refused and counts the reason", "[l2]") {
  TempDir t("l2-");
  DiskStore store(options_for(t.path));
  REQUIRE(store.store(EntryKind::vk_pipeline_cache, kKey, kDevice, pipeline_cache_payload(64, 8), 1));
  REQUIRE(store.load(EntryKind::vk_pipeline_cache, kKey, kDevice));
  store.reject(EntryKind::vk_pipeline_cache, kKey, "driver");
  CHECK_FALSE(fs::exists(entry_path(t.path, EntryKind::vk_pipeline_cache, kKey)));
  CHECK(store.stats().rejected == Reasons{{"driver", 1}});
  CHECK_FALSE(store.load(EntryKind::vk_pipeline_cache, kKey, kDevice));
}

// ---- unusable and disabled directories

TEST_CASE("an unusable directory disables the store: loads and stores are no-ops", "[l2]") {
  TempDir t("l2-");
  write_bytes(t.path / "file", Bytes{1});
  const fs::path dir = t.path / "file" / "cache";  // a path under a regular file: never creatable
  DiskStore store(options_for(dir));
  CHECK_FALSE(store.enabled());
  CHECK(store.directory() == dir);
  CHECK_FALSE(store.store(kAnyBytes, kKey, kDevice, make_payload(100, 9), 1));
  CHECK_FALSE(store.load(kAnyBytes, kKey, kDevice));
  store.reject(kAnyBytes, kKey, "driver");
  const auto s = store.stats();
  CHECK(s.hits + s.misses + s.writes + s.write_failures + s.evictions == 0);
  CHECK(s.rejected.empty());
  CHECK(store.list(true).empty());
  CHECK(store.clear() == 0);

  if (permission_bits_bind()) {  // permission bits stop only non-root users, and not on Windows
    const fs::path ro = t.path / "readonly";
    fs::create_directories(ro / ("v" + std::to_string(vgpu::kCacheFormatVersion)));
    fs::permissions(ro, fs::perms::owner_read | fs::perms::owner_exec, fs::perm_options::replace);
    fs::permissions(ro / ("v" + std::to_string(vgpu::kCacheFormatVersion)),
                    fs::perms::owner_read | fs::perms::owner_exec, fs::perm_options::replace);
    DiskStore readonly(options_for(ro));
    CHECK_FALSE(readonly.enabled());
    fs::permissions(ro / ("v" + std::to_string(vgpu::kCacheFormatVersion)), fs::perms::owner_all,
                    fs::perm_options::replace);
    fs::permissions(ro, fs::perms::owner_all, fs::perm_options::replace);
  }
}

TEST_CASE("an unusable VGPU_CACHE_DIR gives one warning per process and devices keep working", "[l2][processes]") {
  TempDir t("l2-");
  write_bytes(t.path / "file", Bytes{1});
  const fs::path dir = t.path / "file" / "cache";
  const fs::path out = t.path / "out.txt", err = t.path / "err.txt";
  const std::string cmd = cache_env(dir) + quoted(vgpu::test::helper_path(VGPU_L2_WRITER)) + " global >" +
                          quoted(out.string()) + " 2>" + quoted(err.string());
  const int rc = std::system(cmd.c_str());
  const std::string stdout_text(reinterpret_cast<const char*>(read_bytes(out).data()), read_bytes(out).size());
  std::ifstream err_in(err);
  std::vector<std::string> cache_warnings;
  std::string all_err;
  for (std::string line; std::getline(err_in, line);) {
    all_err += line + "\n";
    if (line.find("kernel cache directory") != std::string::npos) cache_warnings.push_back(line);
  }
  INFO("stdout:\n" << stdout_text << "stderr:\n" << all_err);
  REQUIRE(WIFEXITED(rc));
  CHECK(WEXITSTATUS(rc) == 0);
  CHECK_THAT(stdout_text, Catch::Matchers::ContainsSubstring("enabled=0"));
  CHECK_THAT(stdout_text, Catch::Matchers::ContainsSubstring("matmul=ok"));
  REQUIRE(cache_warnings.size() == 1);
  CHECK_THAT(cache_warnings[0], Catch::Matchers::StartsWith("vgpu: warning: "));
  CHECK_THAT(cache_warnings[0], Catch::Matchers::ContainsSubstring(dir.string()));
  CHECK_THAT(cache_warnings[0], Catch::Matchers::ContainsSubstring("Fix: set VGPU_CACHE_DIR to a writable directory"));

  // Disabled on purpose: no warning. Writable: enabled, no warning.
  for (const std::string& extra : {std::string("VGPU_CACHE_DISABLE=1 "), std::string()}) {
    const fs::path use = extra.empty() ? t.path / "ok" : dir;
    const std::string c2 = cache_env(use) + extra + quoted(vgpu::test::helper_path(VGPU_L2_WRITER)) + " global >" +
                           quoted(out.string()) + " 2>" + quoted(err.string());
    const int rc2 = std::system(c2.c_str());
    const Bytes o = read_bytes(out), e = read_bytes(err);
    const std::string o_text(o.begin(), o.end()), e_text(e.begin(), e.end());
    INFO("env: " << extra << "\nstdout:\n" << o_text << "stderr:\n" << e_text);
    REQUIRE(WIFEXITED(rc2));
    CHECK(WEXITSTATUS(rc2) == 0);
    CHECK_THAT(o_text, Catch::Matchers::ContainsSubstring(extra.empty() ? "enabled=1" : "enabled=0"));
    CHECK_THAT(e_text, !Catch::Matchers::ContainsSubstring("kernel cache directory"));
  }
}

TEST_CASE("VGPU_CACHE_DISABLE=1 turns the store off without touching the directory", "[l2][env]") {
  TempDir t("l2-");
  const fs::path dir = t.path / "cache";
  ScopedEnv cache_dir("VGPU_CACHE_DIR", dir.string());
  ScopedEnv max("VGPU_CACHE_MAX_BYTES", std::nullopt);
  {
    ScopedEnv disable("VGPU_CACHE_DISABLE", "1");
    const auto o = DiskStoreOptions::from_env();
    CHECK_FALSE(o.enabled);
    CHECK(o.directory == dir);
    DiskStore store(o);
    CHECK_FALSE(store.enabled());
    CHECK_FALSE(store.store(kAnyBytes, kKey, kDevice, make_payload(10, 1), 1));
    CHECK_FALSE(store.load(kAnyBytes, kKey, kDevice));
    CHECK_FALSE(fs::exists(dir));
  }
  {
    ScopedEnv disable("VGPU_CACHE_DISABLE", "true");
    CHECK_FALSE(DiskStoreOptions::from_env().enabled);
  }
  {
    ScopedEnv disable("VGPU_CACHE_DISABLE", "0");
    DiskStore store(DiskStoreOptions::from_env());
    CHECK(store.enabled());
    CHECK(store.store(kAnyBytes, kKey, kDevice, make_payload(10, 1), 1));
    CHECK(fs::exists(entry_path(dir, kAnyBytes, kKey)));
  }
}

TEST_CASE("from_env picks the directory and parses VGPU_CACHE_MAX_BYTES", "[l2][env]") {
  ScopedEnv disable("VGPU_CACHE_DISABLE", std::nullopt);
  {
    ScopedEnv a("VGPU_CACHE_DIR", "/some/where");
    ScopedEnv b("XDG_CACHE_HOME", "/xdg");
    CHECK(DiskStoreOptions::from_env().directory == fs::path("/some/where"));
  }
#if defined(_WIN32)
  // Windows: %LOCALAPPDATA%, else the profile's AppData\Local (docs/platforms.md).
  {
    ScopedEnv a("VGPU_CACHE_DIR", std::nullopt);
    ScopedEnv b("LOCALAPPDATA", "C:\\local");
    CHECK(DiskStoreOptions::from_env().directory == fs::path("C:\\local") / "vgpu");
  }
  {
    ScopedEnv a("VGPU_CACHE_DIR", std::nullopt);
    ScopedEnv b("LOCALAPPDATA", std::nullopt);
    ScopedEnv c("USERPROFILE", "C:\\Users\\someone");
    CHECK(DiskStoreOptions::from_env().directory == fs::path("C:\\Users\\someone") / "AppData" / "Local" / "vgpu");
  }
#else
  {
    ScopedEnv a("VGPU_CACHE_DIR", std::nullopt);
    ScopedEnv b("XDG_CACHE_HOME", "/xdg");
    CHECK(DiskStoreOptions::from_env().directory == fs::path("/xdg/vgpu"));
  }
  {
    ScopedEnv a("VGPU_CACHE_DIR", std::nullopt);
    ScopedEnv b("XDG_CACHE_HOME", std::nullopt);
    ScopedEnv c("HOME", "/home/someone");
    CHECK(DiskStoreOptions::from_env().directory == fs::path("/home/someone/.cache/vgpu"));
  }
#endif
  const std::uint64_t fallback = DiskStoreOptions{}.max_bytes;
  CHECK(fallback == 512ull << 20);
  const std::pair<const char*, std::uint64_t> cases[] = {
      {"1048576", 1048576},   {"64M", 64ull << 20}, {"2GiB", 2ull << 30},
      {"100k", 100ull << 10}, {"junk", fallback},   {"0", fallback},
      {"-5", fallback},       {"12Q", fallback},    {"99999999999999999999999", fallback}};
  for (const auto& [text, want] : cases) {
    ScopedEnv m("VGPU_CACHE_MAX_BYTES", std::string(text));
    INFO("VGPU_CACHE_MAX_BYTES=" << text);
    CHECK(DiskStoreOptions::from_env().max_bytes == want);
  }
}

// ---- the size cap

TEST_CASE("the size cap evicts the cheapest entries per byte and keeps the expensive one", "[l2][evict]") {
  TempDir t("l2-");
  ScopedEnv dir("VGPU_CACHE_DIR", t.path.string());
  ScopedEnv disable("VGPU_CACHE_DISABLE", std::nullopt);
  ScopedEnv max("VGPU_CACHE_MAX_BYTES", "100000");
  DiskStore store(DiskStoreOptions::from_env());
  REQUIRE(store.enabled());
  // Written first, so least-recently-used alone would evict it first.
  const Bytes expensive = make_payload(20000, 10);
  REQUIRE(store.store(kAnyBytes, kKey, kDevice, expensive, 5'000'000));
  for (std::uint64_t i = 0; i < 12; ++i)
    REQUIRE(store.store(kAnyBytes, KernelKey{7, i}, kDevice, make_payload(10000, 100 + static_cast<std::uint32_t>(i)),
                        100));

  const auto s = store.stats();
  CHECK(s.evictions >= 4);
  CHECK(bytes_on_disk(t.path) <= 100000);
  const auto got = store.load(kAnyBytes, kKey, kDevice);
  REQUIRE(got);
  CHECK(*got == expensive);
  // The newest cheap entry survives too: it was written after the last eviction pass or kept as the most recent.
  CHECK(store.load(kAnyBytes, KernelKey{7, 11}, kDevice));
  CHECK(store.list(true).size() == 1 + 12 - s.evictions);
}

TEST_CASE("equal cost per byte evicts the least recently used, and a load refreshes an entry", "[l2][evict]") {
  TempDir t("l2-");
  DiskStore store(options_for(t.path, 50000));
  const KernelKey a{1, 1}, b{1, 2}, c{1, 3}, d{1, 4}, e{1, 5};
  for (const auto& k : {a, b, c}) REQUIRE(store.store(kAnyBytes, k, kDevice, make_payload(10000, 11), 100));
  set_mtime_ago(entry_path(t.path, kAnyBytes, a), 300);
  set_mtime_ago(entry_path(t.path, kAnyBytes, b), 200);
  set_mtime_ago(entry_path(t.path, kAnyBytes, c), 100);
  REQUIRE(store.load(kAnyBytes, a, kDevice));  // a becomes the most recently used of the three
  REQUIRE(store.store(kAnyBytes, d, kDevice, make_payload(10000, 12), 100));
  CHECK(store.stats().evictions == 0);
  REQUIRE(store.store(kAnyBytes, e, kDevice, make_payload(10000, 13), 100));  // 5 × ~10.1 kB > 50000
  CHECK(store.stats().evictions == 1);                                        // down to ≤ 45000: one entry goes
  CHECK_FALSE(fs::exists(entry_path(t.path, kAnyBytes, b)));
  for (const auto& k : {a, c, d, e}) CHECK(fs::exists(entry_path(t.path, kAnyBytes, k)));
}

TEST_CASE("a new instance counts the entries already on disk towards the cap", "[l2][evict]") {
  TempDir t("l2-");
  {
    DiskStore big(options_for(t.path, 1ull << 30));
    for (std::uint64_t i = 0; i < 8; ++i)
      REQUIRE(big.store(kAnyBytes, KernelKey{2, i}, kDevice, make_payload(10000, 20), 100));
  }
  DiskStore small(options_for(t.path, 50000));
  REQUIRE(small.store(kAnyBytes, KernelKey{3, 0}, kDevice, make_payload(1000, 21), 1'000'000));
  CHECK(small.stats().evictions >= 4);
  CHECK(bytes_on_disk(t.path) <= 45000);
  CHECK(small.load(kAnyBytes, KernelKey{3, 0}, kDevice));
}

TEST_CASE("a payload larger than the cap is not stored", "[l2][evict]") {
  TempDir t("l2-");
  DiskStore store(options_for(t.path, 4096));
  CHECK_FALSE(store.store(kAnyBytes, kKey, kDevice, make_payload(5000, 22), 1));
  CHECK_FALSE(fs::exists(entry_path(t.path, kAnyBytes, kKey)));
  CHECK(store.store(kAnyBytes, kKey, kDevice, make_payload(1000, 22), 1));
}

// ---- concurrency

TEST_CASE("eight processes writing one key at once always leave one writer's whole entry", "[l2][processes]") {
  TempDir t("l2-");
  const auto options = options_for(t.path);
  constexpr int kWriters = 8, kRounds = 50;
  std::vector<Bytes> payloads;
  for (int i = 0; i < kWriters; ++i)
    payloads.push_back(make_payload(150000 + static_cast<std::size_t>(i) * 3001, 1000 + static_cast<std::uint32_t>(i)));
  auto which = [&](const Bytes& got) {
    for (int i = 0; i < kWriters; ++i)
      if (got == payloads[static_cast<std::size_t>(i)]) return i;
    return -1;
  };
  std::set<int> winners;
#if defined(_WIN32)
  (void)which;
  FAIL("needs fork() and pipe(): not ported to Windows (tools/dev.sh cross windows excludes it)");
#else
  for (int round = 0; round < kRounds; ++round) {
    int go[2];
    REQUIRE(::pipe(go) == 0);
    std::vector<pid_t> children;
    for (int i = 0; i <= kWriters; ++i) {  // kWriters writers and one reader
      const pid_t pid = ::fork();
      REQUIRE(pid >= 0);
      if (pid == 0) {
        ::close(go[1]);
        DiskStore store(options);
        char c;
        while (::read(go[0], &c, 1) < 0 && errno == EINTR) {
        }  // returns 0 when the parent closes its end: everyone starts at once
        if (i < kWriters)
          ::_exit(store.store(kAnyBytes, kKey, kDevice, payloads[static_cast<std::size_t>(i)], 10) ? 0 : 1);
        for (int n = 0; n < 40; ++n) {
          const auto got = store.load(kAnyBytes, kKey, kDevice);
          if (got && which(*got) < 0) ::_exit(2);
        }
        ::_exit(store.stats().rejected.empty() ? 0 : 3);
      }
      children.push_back(pid);
    }
    ::close(go[0]);
    ::close(go[1]);
    for (std::size_t i = 0; i < children.size(); ++i) {
      int status = 0;
      REQUIRE(::waitpid(children[i], &status, 0) == children[i]);
      INFO("round " << round << ", child " << i << (i < kWriters ? " (writer)" : " (reader)"));
      REQUIRE(WIFEXITED(status));
      CHECK(WEXITSTATUS(status) == 0);
    }
    DiskStore check(options);
    const auto got = check.load(kAnyBytes, kKey, kDevice);
    INFO("round " << round);
    REQUIRE(got);
    const int winner = which(*got);
    REQUIRE(winner >= 0);
    winners.insert(winner);
    CHECK(check.stats().rejected.empty());
    CHECK(files_named(t.path, ".tmp-") == 0);
    CHECK(fs::file_size(entry_path(t.path, kAnyBytes, kKey)) ==
          header_bytes(kDevice) + payloads[static_cast<std::size_t>(winner)].size());
  }
#endif
  INFO("distinct winners over " << kRounds << " rounds: " << winners.size());
  CHECK(!winners.empty());
}

TEST_CASE("threads loading and storing at once only ever see whole entries", "[l2][threads]") {
  TempDir t("l2-");
  // With room for everything, and with a cap that makes stores evict while others load.
  const std::uint64_t cap = GENERATE(1ull << 30, 60000ull);
  DiskStore store(options_for(t.path, cap));
  constexpr int kThreads = 8, kIterations = 300, kKeys = 4;
  auto payload_of = [](int key, int thread) {
    return make_payload(5000 + static_cast<std::size_t>(key) * 100 + static_cast<std::size_t>(thread) * 7,
                        static_cast<std::uint32_t>(key * 16 + thread));
  };
  std::atomic<int> bad{0};
  std::atomic<std::uint64_t> stores{0}, loads{0};
  std::vector<std::thread> threads;
  for (int th = 0; th < kThreads; ++th)
    threads.emplace_back([&, th] {
      for (int i = 0; i < kIterations; ++i) {
        const int key = (i + th) % kKeys;
        const KernelKey k{9, static_cast<std::uint64_t>(key)};
        if (i % 3 == 0) {
          if (!store.store(kAnyBytes, k, kDevice, payload_of(key, th), 10)) ++bad;
          ++stores;
        } else {
          ++loads;
          const auto got = store.load(kAnyBytes, k, kDevice);
          if (!got) continue;
          // The size tells which thread wrote it; the bytes must be exactly that thread's.
          const int writer = static_cast<int>(got->size() - 5000 - static_cast<std::size_t>(key) * 100) / 7;
          if (writer < 0 || writer >= kThreads || *got != payload_of(key, writer)) ++bad;
        }
      }
    });
  for (auto& th : threads) th.join();
  const auto s = store.stats();
  INFO("cap " << cap);
  CHECK(bad == 0);
  CHECK(s.rejected.empty());
  CHECK(s.writes == stores);
  CHECK(s.hits + s.misses == loads);
  CHECK(s.hits > 0);
  CHECK(files_named(t.path, ".tmp-") == 0);
  if (cap < (1ull << 20)) CHECK(bytes_on_disk(t.path) <= cap);
}

// ---- maintenance and the CLI

namespace {

/// A writer's temp file name (what store() creates: ".tmp-<32 hex>-XXXXXX").
const std::string kTempName = ".tmp-" + KernelKey{5, 9}.hex() + "-Ab12Cd";

/// Fills dir with 3 valid entries (2 glbin, 1 vkpc), one whose payload is corrupt, one badly
/// named file and one temp file; returns the corrupt entry's path.
fs::path fill_for_maintenance(const fs::path& dir) {
  DiskStore store(options_for(dir));
  REQUIRE(store.store(kAnyBytes, KernelKey{5, 1}, kDevice, make_payload(1000, 30), 1));
  REQUIRE(store.store(kAnyBytes, KernelKey{5, 2}, kDevice, make_payload(2000, 31), 1));
  REQUIRE(store.store(EntryKind::vk_pipeline_cache, KernelKey{5, 3}, kDevice, pipeline_cache_payload(32, 32), 1));
  REQUIRE(store.store(kAnyBytes, KernelKey{5, 4}, kDevice, make_payload(500, 33), 1));
  const fs::path corrupt = entry_path(dir, kAnyBytes, KernelKey{5, 4});
  modify(corrupt, [](Bytes& b) { b.back() ^= 1; });
  write_bytes(corrupt.parent_path() / "notes.txt", Bytes{'x'});
  write_bytes(corrupt.parent_path() / kTempName, Bytes{'y'});
  return corrupt;
}

}  // namespace

TEST_CASE("list, remove_invalid and clear", "[l2][maintenance]") {
  TempDir t("l2-");
  const fs::path corrupt = fill_for_maintenance(t.path);
  DiskStore store(options_for(t.path));
  auto count_invalid = [](const std::vector<vgpu::cache::DiskEntryInfo>& v) {
    return std::count_if(v.begin(), v.end(), [](const auto& e) { return !e.valid; });
  };
  const auto quick = store.list(false);  // headers only: the payload corruption goes unseen
  CHECK(quick.size() == 5);
  CHECK(count_invalid(quick) == 1);
  const auto full = store.list(true);
  REQUIRE(full.size() == 5);
  CHECK(count_invalid(full) == 2);
  for (const auto& e : full) {
    INFO(e.path << ": " << e.problem);
    if (e.path == corrupt) CHECK_THAT(e.problem, Catch::Matchers::StartsWith("checksum: "));
    if (e.path.filename() == "notes.txt") CHECK_THAT(e.problem, Catch::Matchers::StartsWith("name: "));
  }
  // Only vgpu's own files are deleted: notes.txt is not named like an entry, so it stays and
  // is reported as left, with a Fix hint.
  std::vector<vgpu::cache::DiskLeftover> left;
  CHECK(store.remove_invalid(&left) == 1);
  CHECK(store.stats().rejected == Reasons{{"checksum", 1}});
  CHECK_FALSE(fs::exists(corrupt));
  CHECK(fs::exists(corrupt.parent_path() / "notes.txt"));
  REQUIRE(left.size() == 1);
  CHECK(left[0].item.path == corrupt.parent_path() / "notes.txt");
  CHECK_FALSE(left[0].failed);
  CHECK_THAT(left[0].why, Catch::Matchers::ContainsSubstring("Fix: "));
  CHECK(count_invalid(store.list(true)) == 1);
  CHECK(store.clear(&left) == 3);
  REQUIRE(left.size() == 1);
  CHECK(left[0].item.path.filename() == "notes.txt");
  const auto after = store.list(true);
  REQUIRE(after.size() == 1);
  CHECK(after[0].path.filename() == "notes.txt");
  CHECK(files_named(t.path, kTempName) == 1);  // a writer in progress is left alone
  CHECK_FALSE(store.load(kAnyBytes, KernelKey{5, 1}, kDevice));
}

TEST_CASE("vgpu-probe cache stats, verify and clear", "[l2][cli]") {
  TempDir t("l2-");
  const fs::path dir = t.path / "cache";
  const fs::path corrupt = fill_for_maintenance(dir);
  const std::string probe = cache_env(dir) + quoted(vgpu::test::helper_path(VGPU_PROBE)) + " cache ";

  auto [rc, out] = run_command(probe + "stats --json");
  INFO(out);
  REQUIRE(rc == 0);
  auto j = nlohmann::json::parse(out);
  CHECK(j["directory"] == dir.string());
  CHECK(j["enabled"] == true);
  CHECK(j["entries"] == 5);
  CHECK(j["kinds"]["glbin"]["entries"] == 4);
  CHECK(j["kinds"]["vkpc"]["entries"] == 1);
  CHECK(j["total_bytes"].get<std::uint64_t>() == bytes_on_disk(dir) - 1);  // minus the temp file

  std::tie(rc, out) = run_command(probe + "stats");
  CHECK(rc == 0);
  CHECK_THAT(out, Catch::Matchers::ContainsSubstring(dir.string()));
  CHECK_THAT(out, Catch::Matchers::ContainsSubstring("glbin"));

  std::tie(rc, out) = run_command(probe + "verify --json");
  CHECK(rc == 1);
  j = nlohmann::json::parse(out);
  REQUIRE(j["bad"].size() == 2);
  CHECK(fs::exists(corrupt));
  std::tie(rc, out) = run_command(probe + "verify");
  CHECK(rc == 1);
  CHECK_THAT(out, Catch::Matchers::ContainsSubstring("checksum"));
  // --fix deletes the corrupt entry; notes.txt is not vgpu's, so it is left, reported, and
  // the exit code says something bad remains.
  const fs::path notes = corrupt.parent_path() / "notes.txt";
  std::tie(rc, out) = run_command(probe + "verify --fix --json");
  CHECK(rc == 1);
  j = nlohmann::json::parse(out);
  CHECK(j["removed"] == 1);
  REQUIRE(j["left"].size() == 1);
  CHECK(j["left"][0]["path"] == notes.string());
  CHECK_THAT(j["left"][0]["why"].get<std::string>(), Catch::Matchers::ContainsSubstring("Fix: "));
  CHECK_FALSE(fs::exists(corrupt));
  CHECK(fs::exists(notes));
  std::tie(rc, out) = run_command(probe + "verify");
  CHECK(rc == 1);
  CHECK_THAT(out, Catch::Matchers::ContainsSubstring("notes.txt"));

  std::tie(rc, out) = run_command(probe + "clear");
  CHECK(rc == 1);  // notes.txt is still there
  CHECK_THAT(out, Catch::Matchers::ContainsSubstring("removed 3 "));
  CHECK_THAT(out, Catch::Matchers::ContainsSubstring("LEFT " + notes.string()));
  CHECK(fs::exists(notes));
  fs::remove(notes);
  std::tie(rc, out) = run_command(probe + "verify");
  CHECK(rc == 0);
  std::tie(rc, out) = run_command(probe + "clear");
  CHECK(rc == 0);
  CHECK_THAT(out, Catch::Matchers::ContainsSubstring("removed 0 "));
  DiskStore store(options_for(dir));
  CHECK(store.list(true).empty());
}

}  // namespace vgpu_test
