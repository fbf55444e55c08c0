// SPDX-License-Identifier: Apache-2.0
// tests/cache/l2_untrusted_support.hpp — what the hostile-directory tests share (the portable
// l2_untrusted_dir_test.cpp and the POSIX-only l2_untrusted_posix_test.cpp): the device and key
// they use, entry names, snapshots of folders that must not change, folders full of things a
// store that followed a link would read or delete, the checks that maintenance reports an
// unusable folder, and the checks on entries planted where they do not belong.
#pragma once

#include <algorithm>
#include "support/catch.hpp"
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "support/cache_fixtures.hpp"
#include "support/fs_links.hpp"
#include "support/valid_payloads.hpp"
#include "vgpu/cache/disk_store.hpp"
#include "vgpu/version.hpp"

namespace vgpu_test::untrusted {

using vgpu::cache::DiskEntryInfo;
using vgpu::cache::DiskLeftover;
using vgpu::cache::LoadOutcome;
using vgpu_test::payload_for;  // payloads each kind's payload check accepts

inline const DeviceFingerprint kDevice = vgpu::test::fingerprint("backend=test;model=untrusted;vgpu_cache_format=2");
inline constexpr KernelKey kKey{0x0123456789abcdefull, 0x0011223344556677ull};

/// The store's v<format> folder under the cache directory dir.
inline fs::path format_dir(const fs::path& dir) { return dir / ("v" + std::to_string(vgpu::kCacheFormatVersion)); }

/// The file name of key's entry.
inline std::string entry_name(const KernelKey& key) { return key.hex() + ".vgc"; }

/// The bytes of the file at p ("" when it cannot be read).
inline std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

/// Writes text to p, replacing what was there.
inline void write_text(const fs::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << text;
  REQUIRE(out.good());
}

/// Every file under dir (links not followed): relative path → what it is and holds.
inline std::map<std::string, std::string> snapshot(const fs::path& dir) {
  std::map<std::string, std::string> out;
  for (fs::recursive_directory_iterator it(dir), end; it != end; ++it) {
    const std::string rel = fs::relative(it->path(), dir).string();
    if (is_link(it->path())) {
      out[rel] = "link";
      it.disable_recursion_pending();  // MinGW's libstdc++ would walk into a junction
    } else if (it->is_regular_file())
      out[rel] = "file:" + read_text(it->path());
    else if (it->is_directory())
      out[rel] = "dir";
    else
      out[rel] = "other";
  }
  return out;
}

/// Returns the bytes of a valid entry file of kind under key for kDevice (written by a store
/// in a scratch directory).
inline std::string valid_entry(EntryKind kind, const KernelKey& key, std::size_t payload_bytes) {
  TempDir scratch("l2u-scratch-");
  DiskStore store(options_for(scratch.path));
  REQUIRE(store.store(kind, key, kDevice, payload_for(kind, payload_bytes, 7), 0));
  return read_text(format_dir(scratch.path) / std::string(vgpu::cache::to_string(kind)) / entry_name(key));
}

/// Fills folder with what a vgpu kind folder could hold and more, all of which must survive
/// whatever vgpu does when folder is reached through a link: a valid entry of kind under
/// kKey (a load that followed the link would hit it), a garbage file named like an entry
/// (cost 0: the first an eviction would delete), an hour-old file named like a writer's temp
/// file, and files of any other name.
inline void fill_outside(const fs::path& folder, EntryKind kind) {
  fs::create_directories(folder);
  write_text(folder / entry_name(kKey), valid_entry(kind, kKey, 30000));
  write_text(folder / entry_name(KernelKey{0xdead, 0xbeef}), std::string(40000, 'g'));
  const fs::path temp = folder / ".tmp-00000000000000000000000000000001-Ab12Cd";
  write_text(temp, "old temp");
  fs::last_write_time(temp, fs::file_time_type::clock::now() - std::chrono::hours(1));
  write_text(folder / "notes.txt", "my notes");
  write_text(folder / "thesis.tex", "\\documentclass{article}");
}

/// Checks that list(true) reports folder as an unusable folder (a link or not a directory).
inline void check_folder_reported(const std::vector<DiskEntryInfo>& items, const fs::path& folder) {
  const auto it = std::find_if(items.begin(), items.end(), [&](const DiskEntryInfo& e) { return e.path == folder; });
  INFO("folder " << folder);
  CHECK(it != items.end());  // not REQUIRE: the test goes on to check the files outside
  if (it == items.end()) return;
  CHECK(it->folder);
  CHECK_FALSE(it->valid);
  CHECK_FALSE(it->deletable);
  CHECK_THAT(it->problem, Catch::Matchers::StartsWith("type: "));
  CHECK_FALSE(it->fix.empty());
}

/// Checks that left holds folder, left alone on purpose, with a Fix hint.
inline void check_folder_left(const std::vector<DiskLeftover>& left, const fs::path& folder) {
  const auto it = std::find_if(left.begin(), left.end(), [&](const DiskLeftover& l) { return l.item.path == folder; });
  INFO("folder " << folder);
  CHECK(it != left.end());
  if (it == left.end()) return;
  CHECK_FALSE(it->failed);
  CHECK_THAT(it->why, Catch::Matchers::ContainsSubstring("Fix: remove it"));
}

/// Failed checks gathered where Catch cannot report them (a forked child, a thread that may
/// hang), as text.
struct Checks {
  std::string failures;
  /// Records message when ok is false.
  void expect(bool ok, const std::string& message) {
    if (!ok) failures += message + "\n";
  }
};

/// One thing planted where an entry belongs: its path and the words list() must use for it.
struct Planted {
  fs::path path;
  std::string type_text;  // e.g. "a FIFO"
};

/// Plants non-entries in a store's spirv and glbin folders: each kind of thing twice, under an
/// entry name (keys {6, i}, i counting up per kind) and under another name, recording what it
/// planted and which keys, for check_planted_entries.
struct Planter {
  fs::path spirv, glbin;
  std::vector<Planted> planted{};
  std::vector<KernelKey> keys{};
  std::uint64_t next = 0;

  /// Makes one thing of type_text at both places with make (which returns "" or why it could
  /// not); a kind the system cannot make is reported with a warning and left out.
  void plant(const std::string& type_text, const std::function<std::string(const fs::path&)>& make) {
    const KernelKey key{6, next++};
    for (const fs::path& p : {spirv / entry_name(key), glbin / ("junk-" + std::to_string(key.lo))}) {
      const std::string why = make(p);
      if (!why.empty()) {
        WARN("skipping " << type_text << " at " << p << ": " << why);
        return;
      }
      planted.push_back({p, type_text});
    }
    keys.push_back(key);
  }
};

/// With a store on dir (its spirv folder holding planted, those under entry names being the
/// keys planted_keys): every load and store of a planted key is refused and counted as a
/// "type" rejection, other keys work and evict, list() (plain and verifying) reports each
/// planted thing as not valid, not deletable, with its type text, and remove_invalid and clear
/// leave each with a Fix hint. What fails goes into c.
inline void check_planted_entries(const fs::path& dir, const std::vector<Planted>& planted,
                                  const std::vector<KernelKey>& planted_keys, Checks& c) {
  DiskStore store(options_for(dir, 60000));
  c.expect(store.enabled(), "the store is off");
  for (const KernelKey& key : planted_keys) {
    LoadOutcome outcome = LoadOutcome::hit;
    c.expect(!store.load(EntryKind::spirv, key, kDevice, &outcome), "a load of " + key.hex() + " hit");
    c.expect(outcome == LoadOutcome::rejected, "a load of " + key.hex() + " was not counted as rejected");
    c.expect(!store.store(EntryKind::spirv, key, kDevice, payload_for(EntryKind::spirv, 100, 7), 1),
             "a store replaced the non-file at " + key.hex());
  }
  const auto rejected = store.stats().rejected;
  c.expect(rejected.count("type") && rejected.at("type") == planted_keys.size(),
           "rejections are not counted under 'type'");
  // Other keys work, and enough of them evict (the walk meets every planted thing).
  for (std::uint64_t i = 0; i < 10; ++i)
    c.expect(store.store(EntryKind::spirv, KernelKey{7, i}, kDevice, payload_for(EntryKind::spirv, 10000, 8), 100),
             "a plain store failed");
  c.expect(store.stats().evictions >= 4, "no eviction ran");
  c.expect(static_cast<bool>(store.load(EntryKind::spirv, KernelKey{7, 9}, kDevice)), "the newest entry is gone");
  for (bool verify : {false, true}) {
    const auto items = store.list(verify);
    for (const Planted& p : planted) {
      const auto it =
          std::find_if(items.begin(), items.end(), [&](const DiskEntryInfo& e) { return e.path == p.path; });
      c.expect(it != items.end(), "list() does not report " + p.path.string());
      if (it == items.end()) continue;
      c.expect(!it->valid && !it->deletable, p.path.string() + " is listed as valid or deletable");
      c.expect(it->problem.starts_with("type: " + p.type_text),
               p.path.string() + ": problem '" + it->problem + "', expected 'type: " + p.type_text + "'");
    }
  }
  for (int pass = 0; pass < 2; ++pass) {
    std::vector<DiskLeftover> left;
    if (pass == 0)
      store.remove_invalid(&left);
    else
      store.clear(&left);
    for (const Planted& p : planted) {
      const auto it =
          std::find_if(left.begin(), left.end(), [&](const DiskLeftover& l) { return l.item.path == p.path; });
      c.expect(it != left.end() && !it->failed && it->why.find("Fix: ") != std::string::npos,
               (pass ? "clear" : "remove_invalid") + std::string(" does not report ") + p.path.string());
    }
  }
}

}  // namespace vgpu_test::untrusted
