// SPDX-License-Identifier: Apache-2.0
// tests/cache/l2_untrusted_dir_test.cpp — the L2 directory is untrusted input (docs/cache-format.md,
// "The directory is untrusted input"), on every OS: a linked v<format> or kind folder (a
// symlink; on Windows a symbolic link or a junction, both reparse points) never lets load,
// store, list, remove_invalid, clear or eviction read, write or delete what it points to; a
// file where a kind folder belongs turns that kind off and nothing else; folders and links
// planted where entries belong never block an operation and are reported, never deleted; an
// rm -rf of the cache between two stores does not switch L2 off. Where the system cannot make
// a link (Wine 8 makes none), the link cases say so and are skipped. FIFOs, sockets, devices
// and read-only folders: l2_untrusted_posix_test.cpp. Part of vgpu-test-l2-store.
#include "l2_untrusted_support.hpp"

#include <cstdlib>
#include <functional>
#include <memory>
#include <mutex>
#include <string_view>

#include "support/finishes.hpp"
#include "support/skip_case.hpp"
#include "vgpu/log.hpp"

namespace vgpu_test::untrusted {
namespace {

/// Makes a link at at to the folder target, or reports the case skipped with why the system
/// could not and returns false (the caller returns).
bool folder_link(const fs::path& target, const fs::path& at) {
  const std::string why = make_folder_link(target, at);
  if (!why.empty()) skip_case("this system cannot make a link (" + at.string() + "): " + why);
  return why.empty();
}

// ---- linked folders

TEST_CASE("a linked v<format> folder: nothing it points to is read, written or deleted", "[l2][untrusted]") {
  TempDir t("l2u-");
  const fs::path dir = t.path / "cache", outside = t.path / "outside";
  for (EntryKind kind : {EntryKind::spirv, EntryKind::gl_program_binary, EntryKind::vk_pipeline_cache})
    fill_outside(outside / std::string(vgpu::cache::to_string(kind)), kind);
  write_text(outside / "notes.txt", "top-level notes");
  const auto before = snapshot(outside);

  SECTION("a store opened on it is off, and maintenance reports the folder") {
    fs::create_directories(dir);
    if (!folder_link(outside, format_dir(dir))) return;
    DiskStore store(options_for(dir, 60000));
    CHECK_FALSE(store.enabled());
    CHECK_FALSE(store.load(EntryKind::spirv, kKey, kDevice));
    CHECK_FALSE(store.store(EntryKind::spirv, KernelKey{1, 1}, kDevice, payload_for(EntryKind::spirv, 100, 1), 1));
    const auto items = store.list(true);
    CHECK(items.size() == 1);
    check_folder_reported(items, format_dir(dir));
    std::vector<DiskLeftover> left;
    CHECK(store.remove_invalid(&left) == 0);
    check_folder_left(left, format_dir(dir));
    CHECK(store.clear(&left) == 0);
    check_folder_left(left, format_dir(dir));
  }
  SECTION("a running store whose v<format> folder becomes a link turns L2 off without touching it") {
    DiskStore store(options_for(dir, 60000));
    REQUIRE(store.enabled());
    REQUIRE(store.store(EntryKind::spirv, KernelKey{1, 2}, kDevice, payload_for(EntryKind::spirv, 100, 2), 1));
    fs::remove_all(format_dir(dir));
    if (!folder_link(outside, format_dir(dir))) return;
    LoadOutcome outcome = LoadOutcome::hit;
    CHECK_FALSE(store.load(EntryKind::spirv, kKey, kDevice, &outcome));  // the outside entry is valid for kKey
    CHECK(outcome == LoadOutcome::disabled);
    for (std::uint64_t i = 0; i < 8; ++i)  // 8 × 10 kB over a 60 kB cap: would evict
      CHECK_FALSE(store.store(EntryKind::spirv, KernelKey{2, i}, kDevice, payload_for(EntryKind::spirv, 10000, 3), 1));
    CHECK(store.stats().write_failures == 8);
    CHECK(store.stats().evictions == 0);
    store.reject(EntryKind::spirv, kKey, "driver");
    check_folder_reported(store.list(true), format_dir(dir));
    std::vector<DiskLeftover> left;
    CHECK(store.remove_invalid(&left) == 0);
    check_folder_left(left, format_dir(dir));
    CHECK(store.clear(&left) == 0);
    check_folder_left(left, format_dir(dir));
  }
  CHECK(snapshot(outside) == before);
}

/// Stores enough vk_pipeline_cache entries into store (capped at 60 kB) to evict, and checks
/// that the newest is still there: the kinds whose folders are usable keep working.
void check_vkpc_still_works(DiskStore& store) {
  for (std::uint64_t i = 0; i < 10; ++i)
    REQUIRE(store.store(EntryKind::vk_pipeline_cache, KernelKey{4, i}, kDevice,
                        payload_for(EntryKind::vk_pipeline_cache, 10000, 5), 100));
  CHECK(store.stats().evictions >= 4);
  REQUIRE(store.load(EntryKind::vk_pipeline_cache, KernelKey{4, 9}, kDevice));
}

/// Checks that list, remove_invalid and clear report each of the kind folders under v and
/// delete none of them (clear deletes the usable vkpc entries only).
void check_kind_folders_reported(DiskStore& store, const fs::path& v, const std::vector<std::string>& kinds) {
  const auto items = store.list(true);
  for (const std::string& kind : kinds) check_folder_reported(items, v / kind);
  std::vector<DiskLeftover> left;
  CHECK(store.remove_invalid(&left) == 0);
  for (const std::string& kind : kinds) check_folder_left(left, v / kind);
  CHECK(store.clear(&left) >= 1);  // the remaining vkpc entries
  CHECK(left.size() == kinds.size());
  for (const std::string& kind : kinds) check_folder_left(left, v / kind);
}

TEST_CASE("files where kind folders belong: L2 is off for those kinds only, and the files stay", "[l2][untrusted]") {
  TempDir t("l2u-");
  const fs::path dir = t.path / "cache", v = format_dir(dir);
  fs::create_directories(v / "vkpc");
  write_text(v / "select", "a regular file where a folder belongs");
  write_text(v / "cubin", "another");

  DiskStore store(options_for(dir, 60000));
  REQUIRE(store.enabled());
  LoadOutcome outcome = LoadOutcome::hit;
  CHECK_FALSE(store.load(EntryKind::selection, kKey, kDevice, &outcome));
  CHECK(outcome == LoadOutcome::disabled);
  CHECK_FALSE(
      store.store(EntryKind::cuda_binary, KernelKey{3, 2}, kDevice, payload_for(EntryKind::cuda_binary, 100, 4), 1));
  CHECK_FALSE(
      store.store(EntryKind::selection, KernelKey{3, 3}, kDevice, payload_for(EntryKind::selection, 100, 4), 1));
  CHECK(store.stats().write_failures == 2);
  check_vkpc_still_works(store);
  check_kind_folders_reported(store, v, {"select", "cubin"});
  CHECK(read_text(v / "select") == "a regular file where a folder belongs");
  CHECK(read_text(v / "cubin") == "another");
}

TEST_CASE("linked or non-directory kind folders: L2 is off for those kinds and nothing outside is touched",
          "[l2][untrusted]") {
  TempDir t("l2u-");
  const fs::path dir = t.path / "cache", outside = t.path / "outside";
  fill_outside(outside / "spirv", EntryKind::spirv);
  fill_outside(outside / "glbin", EntryKind::gl_program_binary);
  write_text(outside / "a-file", "not a folder");
  const auto before = snapshot(outside);
  const fs::path v = format_dir(dir);
  fs::create_directories(v / "vkpc");
  if (!folder_link(outside / "spirv", v / "spirv") || !folder_link(outside / "glbin", v / "glbin")) return;
  // A link to a file where a folder belongs.
  if (const std::string why = make_file_link(outside / "a-file", v / "cubin"); !why.empty()) {
    skip_case("this system cannot make a file link: " + why);
    return;
  }
  write_text(v / "select", "a regular file where a folder belongs");

  DiskStore store(options_for(dir, 60000));
  REQUIRE(store.enabled());
  LoadOutcome outcome = LoadOutcome::hit;
  CHECK_FALSE(store.load(EntryKind::spirv, kKey, kDevice, &outcome));  // outside/spirv holds a valid kKey entry
  CHECK(outcome == LoadOutcome::disabled);
  CHECK_FALSE(store.load(EntryKind::gl_program_binary, kKey, kDevice));
  CHECK_FALSE(store.store(EntryKind::spirv, KernelKey{3, 1}, kDevice, payload_for(EntryKind::spirv, 100, 4), 1));
  CHECK_FALSE(
      store.store(EntryKind::cuda_binary, KernelKey{3, 2}, kDevice, payload_for(EntryKind::cuda_binary, 100, 4), 1));
  CHECK_FALSE(
      store.store(EntryKind::selection, KernelKey{3, 3}, kDevice, payload_for(EntryKind::selection, 100, 4), 1));
  CHECK(store.stats().write_failures == 3);
  check_vkpc_still_works(store);  // eviction deletes vkpc entries only
  check_kind_folders_reported(store, v, {"spirv", "glbin", "cubin", "select"});
  CHECK(snapshot(outside) == before);
  CHECK(is_link(v / "spirv"));
  CHECK(fs::is_regular_file(v / "select"));
}

/// Warnings logged while it lives (through vgpu's log sink, so it works on every OS and
/// whatever VGPU_LOG says).
class WarningLog {
 public:
  WarningLog()
      : lines_(std::make_shared<Lines>()),
        token_(vgpu::set_log_sink(
            [lines = lines_](vgpu::LogLevel level, std::string_view message) {
              if (level != vgpu::LogLevel::warn) return;
              std::lock_guard lock(lines->m);
              lines->text.emplace_back(message);
            },
            vgpu::LogLevel::warn)) {}
  ~WarningLog() { vgpu::restore_log_sink(token_); }
  WarningLog(const WarningLog&) = delete;
  WarningLog& operator=(const WarningLog&) = delete;

  /// The warnings so far.
  std::vector<std::string> lines() const {
    std::lock_guard lock(lines_->m);
    return lines_->text;
  }

 private:
  struct Lines {
    mutable std::mutex m;
    std::vector<std::string> text;
  };
  std::shared_ptr<Lines> lines_;
  std::uint64_t token_;
};

TEST_CASE("a linked kind folder gives one warning naming it with a Fix hint", "[l2][untrusted]") {
  TempDir t("l2u-");
  const fs::path dir = t.path / "cache", outside = t.path / "outside";
  fill_outside(outside, EntryKind::spirv);
  fs::create_directories(format_dir(dir));
  if (!folder_link(outside, format_dir(dir) / "spirv")) return;
  WarningLog log;
  {
    DiskStore store(options_for(dir));
    for (std::uint64_t i = 0; i < 3; ++i) {
      CHECK_FALSE(store.load(EntryKind::spirv, kKey, kDevice));  // a hit would have followed the link
      CHECK_FALSE(store.store(EntryKind::spirv, KernelKey{5, i}, kDevice, payload_for(EntryKind::spirv, 100, 6), 1));
    }
  }
  const std::vector<std::string> warnings = log.lines();
  const std::string folder = (format_dir(dir) / "spirv").string();
  REQUIRE(warnings.size() == 1);
  CHECK_THAT(warnings[0], Catch::Matchers::ContainsSubstring("'" + folder + "'"));
  // The same words on every OS: a reparse point is a symlink to the store (files_windows.cpp).
  CHECK_THAT(warnings[0], Catch::Matchers::ContainsSubstring("symlink"));
  CHECK_THAT(warnings[0], Catch::Matchers::ContainsSubstring("Fix: remove it"));
  // What it means for the user, said the right way round.
  CHECK_THAT(warnings[0], Catch::Matchers::ContainsSubstring("); spirv entries are not cached on disk. Fix:"));
}

// ---- folders and links where entries belong

TEST_CASE("folders and links planted as entries: everything finishes and reports them", "[l2][untrusted]") {
  TempDir t("l2u-");
  const fs::path dir = t.path / "cache";
  const fs::path spirv = format_dir(dir) / "spirv", glbin = format_dir(dir) / "glbin";
  fs::create_directories(spirv);
  fs::create_directories(glbin);
  const fs::path outside_file = t.path / "outside-file", outside_folder = t.path / "outside-folder";
  write_text(outside_file, valid_entry(EntryKind::spirv, KernelKey{6, 1}, 200));  // what a followed link would load
  fill_outside(outside_folder, EntryKind::spirv);
  const auto before = snapshot(t.path / "outside-folder");

  Planter planter{spirv, glbin};
  planter.plant("a directory", [&](const fs::path& p) {
    fs::create_directories(p / "inside");
    write_text(p / "inside" / "file", "x");
    return std::string();
  });
  planter.plant("a symlink", [&](const fs::path& p) { return make_file_link(outside_file, p); });
  planter.plant("a symlink", [&](const fs::path& p) { return make_folder_link(outside_folder, p); });
  REQUIRE(planter.planted.size() >= 2);  // the directories at least

  // On its own thread with a deadline: a store that blocked on a planted thing fails the test
  // (the thread keeps copies of what it uses).
  auto checks = std::make_shared<Checks>();
  const bool finished =
      finishes([dir, planter, checks] { check_planted_entries(dir, planter.planted, planter.keys, *checks); });
  REQUIRE(finished);
  INFO(checks->failures);
  CHECK(checks->failures.empty());
  for (const Planted& p : planter.planted) {
    INFO(p.path);
    CHECK(present(p.path));
  }
  CHECK(fs::exists(spirv / entry_name(KernelKey{6, 0}) / "inside" / "file"));  // the planted directory's content
  CHECK(fs::is_regular_file(outside_file));
  CHECK(snapshot(outside_folder) == before);
}

// ---- rm -rf under a running process

TEST_CASE("rm -rf of the cache directory between two stores: the second store re-creates it and writes",
          "[l2][untrusted]") {
  TempDir t("l2u-");
  const fs::path dir = t.path / "cache";
  DiskStore store(options_for(dir));
  REQUIRE(store.enabled());
  REQUIRE(store.store(EntryKind::spirv, KernelKey{9, 1}, kDevice, payload_for(EntryKind::spirv, 500, 10), 1));
  fs::remove_all(dir);
  REQUIRE(store.store(EntryKind::spirv, KernelKey{9, 2}, kDevice, payload_for(EntryKind::spirv, 600, 11), 1));
  CHECK(fs::is_regular_file(format_dir(dir) / "spirv" / entry_name(KernelKey{9, 2})));
  CHECK(store.enabled());
  CHECK(store.load(EntryKind::spirv, KernelKey{9, 2}, kDevice));
  // Removed again, this time with another kind: made again too.
  fs::remove_all(dir);
  REQUIRE(store.store(EntryKind::gl_program_binary, KernelKey{9, 3}, kDevice,
                      payload_for(EntryKind::gl_program_binary, 700, 12), 1));
  CHECK(store.load(EntryKind::gl_program_binary, KernelKey{9, 3}, kDevice));
  CHECK(store.stats().write_failures == 0);
  // A new store on the removed directory is on as well.
  fs::remove_all(dir);
  DiskStore fresh(options_for(dir));
  CHECK(fresh.enabled());
}

}  // namespace
}  // namespace vgpu_test::untrusted
