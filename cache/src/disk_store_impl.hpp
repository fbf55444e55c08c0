// SPDX-License-Identifier: Apache-2.0
// cache/src/disk_store_impl.hpp — DiskStore's private state and what its two source files
// share (disk_store.cpp: options, load/store; disk_store_directory.cpp: directory walks,
// eviction, maintenance). Every operation opens the folders it needs afresh and without
// following links (disk_store_fs.hpp), so a folder removed, replaced or re-created under a
// running process is seen as it is now. Internal to cache/src.
#pragma once

#include <cstdint>
#include <filesystem>
#include <mutex>
#include <string>
#include <unordered_map>

#include "disk_store_format.hpp"
#include "disk_store_fs.hpp"
#include "vgpu/cache/disk_store.hpp"

namespace vgpu::cache {

namespace detail {

/// The number of entry kinds (the size of kAllKinds).
inline constexpr std::size_t kKindCount = sizeof kAllKinds / sizeof kAllKinds[0];

/// Returns the index of kind in kAllKinds.
inline std::size_t kind_index(EntryKind kind) noexcept { return static_cast<std::size_t>(kind) - 1; }

/// The v<format> folder and every kind folder in it, opened for one walk (never created).
struct Tree {
  OpenedDir root;
  OpenedDir kinds[kKindCount];
};

}  // namespace detail

struct DiskStore::Impl {
  DiskStoreOptions options;
  std::filesystem::path root;  // <directory>/v<format>
  std::string root_name;       // "v<format>"
  bool usable = false;

  mutable std::mutex mutex;  // guards everything below
  DiskStoreStats stats;
  bool scanned = false;
  std::unordered_map<std::string, std::uint64_t> bytes_of;  // entry path → file bytes
  std::uint64_t total_bytes = 0;
  bool warned_write_failure = false;
  bool evicting = false, evict_again = false;  // one evicting thread per store at a time
  bool full_gave_up = false;                   // evicting did not make room on a full disk once: no more tries

  std::filesystem::path kind_dir(EntryKind kind) const { return root / std::string(to_string(kind)); }
  static std::string entry_name(const KernelKey& key) { return key.hex() + std::string(detail::kEntrySuffix); }
  std::filesystem::path entry_path(EntryKind kind, const KernelKey& key) const {
    return kind_dir(kind) / entry_name(key);
  }

  /// Opens <directory>/v<format> (create: making what is missing). An unusable user directory
  /// comes back as itself (its path), an unusable v<format> folder as that.
  detail::OpenedDir open_root(bool create) const;
  /// Opens the kind's folder in an opened root (create: making it when missing).
  detail::OpenedDir open_kind(const detail::OpenedDir& root_dir, EntryKind kind, bool create) const;
  /// Opens the root and the kind's folder for one load or store; when a part of that path is
  /// absent or unusable, returns that part (its path and problem).
  detail::OpenedDir open_kind_path(EntryKind kind, bool create) const;
  /// Opens the root and every kind folder, creating nothing (for walks).
  detail::Tree open_tree() const;
  /// Warns (once per folder per process) that folder is unusable for kind's entries.
  void warn_folder(const detail::OpenedDir& folder, EntryKind kind) const;

  /// Creates root and a temp file in it; on failure says why and what to do.
  bool check_writable(std::string& why, std::string& fix) const;
  /// Records that path now holds bytes (mutex held).
  void account_locked(const std::string& path, std::uint64_t bytes);
  /// Records that path is gone (mutex held).
  void forget_locked(const std::string& path);
  /// On the first store: learns the sizes of the entries already on disk (no-follow looks only).
  void ensure_scanned();
  /// Counts a failed store and logs it (a warning the first time unless warned is true, meaning
  /// the caller has given its own warning); returns false.
  bool write_failed(const std::string& what, bool warned = false);
  /// Deletes the entry name in the kind folder kind_dir that load() opened (unless another
  /// writer replaced it meanwhile) and counts the rejection and the miss.
  void drop(const platform::Directory& kind_dir, const std::string& name, const std::filesystem::path& path,
            const platform::FileStatus& opened, const detail::Problem& why);
  /// Runs eviction passes until the cap holds; a store that finds a pass already running
  /// (another thread's) asks it for one more pass instead of waiting.
  void evict();
  /// Deletes entries, cheapest to rebuild per byte first (ties: least recently used), until
  /// the entry files take at most 90% of max_bytes, and (min_free > 0) until at least
  /// min_free bytes of entry files are gone. Rescans the directory, so entries written by other
  /// processes count too. Returns the bytes of the entry files that are gone.
  std::uint64_t evict_pass(std::uint64_t min_free = 0);
  /// After a store's write failed with errno e: on a full disk or quota (ENOSPC, EDQUOT) the
  /// first time for this store (made_room false), evicts at least bytes of entries
  /// (evict_pass) and returns true to say "write again"; a second full-disk failure of that
  /// store means the space goes elsewhere, and this store evicts for a full disk no more.
  bool retry_after_full(int e, std::uint64_t bytes, bool& made_room);
  /// Returns stats.evictions (takes the mutex).
  std::uint64_t stats_evictions() const;
};

}  // namespace vgpu::cache
