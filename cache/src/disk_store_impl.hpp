// cache/src/disk_store_impl.hpp — DiskStore's private state and the file-system helpers its
// two source files share (disk_store.cpp: options, load/store; disk_store_directory.cpp:
// directory walks, eviction, maintenance). Internal to cache/src.
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <mutex>
#include <string>
#include <system_error>
#include <unordered_map>

#include "disk_store_format.hpp"
#include "vgpu/cache/disk_store.hpp"

namespace vgpu::cache {

namespace detail {

/// Returns the text of an errno value (thread-safe, unlike strerror).
inline std::string errno_text(int e) { return std::error_code(e, std::generic_category()).message(); }

/// Closes a file descriptor at the end of a scope.
struct Fd {
  int fd = -1;
  explicit Fd(int f) : fd(f) {}
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
};

/// Returns whether two stats describe the same file (device and inode).
inline bool same_file(const struct stat& a, const struct stat& b) {
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/// Returns the modification time in nanoseconds.
inline std::int64_t mtime_ns(const struct stat& st) {
  return static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

/// Returns whether a file name is a writer's temp file.
bool is_temp_name(const std::string& name);

/// Calls fn(kind, path) for every file (not temp file) in the kind directories under root.
template <class Fn>
void for_each_entry_file(const std::filesystem::path& root, Fn&& fn) {
  for (EntryKind kind : kAllKinds) {
    std::error_code ec;
    std::filesystem::directory_iterator it(root / std::string(to_string(kind)), ec), end;
    for (; !ec && it != end; it.increment(ec)) {
      if (is_temp_name(it->path().filename().string())) continue;
      fn(kind, it->path());
    }
  }
}

/// Deletes temp files under root older than max_age_s (abandoned by a crashed writer).
void remove_stale_temps(const std::filesystem::path& root, std::int64_t max_age_s);

}  // namespace detail

struct DiskStore::Impl {
  DiskStoreOptions options;
  std::filesystem::path root;  // <directory>/v<format>
  bool usable = false;

  mutable std::mutex mutex;  // guards everything below
  DiskStoreStats stats;
  bool scanned = false;
  std::unordered_map<std::string, std::uint64_t> bytes_of;  // entry path → file bytes
  std::uint64_t total_bytes = 0;
  std::uint32_t kind_dirs_made = 0;  // bit (1 << kind) once its directory exists
  bool warned_write_failure = false;
  bool evicting = false, evict_again = false;  // one evicting thread per store at a time

  std::filesystem::path kind_dir(EntryKind kind) const { return root / std::string(to_string(kind)); }
  std::filesystem::path entry_path(EntryKind kind, const KernelKey& key) const {
    return kind_dir(kind) / (key.hex() + std::string(detail::kEntrySuffix));
  }

  /// Creates root and a temp file in it; on failure says why.
  bool check_writable(std::string& why) const;
  /// Records that path now holds bytes (mutex held).
  void account_locked(const std::string& path, std::uint64_t bytes);
  /// Records that path is gone (mutex held).
  void forget_locked(const std::string& path);
  /// On the first store: learns the sizes of the entries already on disk (stat only).
  void ensure_scanned();
  /// Creates a kind's directory once.
  void ensure_kind_dir(EntryKind kind);
  /// Counts a failed store and logs it (a warning the first time); returns false.
  bool write_failed(const std::string& what);
  /// Deletes the entry at path that load() opened (unless another writer replaced it
  /// meanwhile) and counts the rejection and the miss.
  void drop(const std::filesystem::path& path, const struct stat& opened, const detail::Problem& why);
  /// Runs eviction passes until the cap holds; a store that finds a pass already running
  /// (another thread's) asks it for one more pass instead of waiting.
  void evict();
  /// Deletes entries, cheapest to rebuild per byte first (ties: least recently used), until
  /// the entry files take at most 90% of max_bytes. Rescans the directory, so entries written
  /// by other processes count too.
  void evict_pass();
};

}  // namespace vgpu::cache
