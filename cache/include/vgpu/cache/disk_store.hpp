// SPDX-License-Identifier: Apache-2.0
// vgpu/cache/disk_store.hpp — L2: the on-disk store of compiled kernel artifacts.
// Backend-author interface (cache/ is shared by core and backends). The file format, directory
// layout and eviction policy are described in docs/cache-format.md.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "vgpu/cache/kernel_key.hpp"
#include "vgpu/config.hpp"
#include "vgpu/device_info.hpp"

namespace vgpu::cache {

/// How one DiskStore::load ended.
enum class LoadOutcome {
  disabled,  ///< the store is off, or its directory or the kind's folder is unusable
  missing,   ///< no entry for the key
  rejected,  ///< an entry existed but failed a check: deleted, or left alone when not a regular file
  hit,       ///< the payload came back
};

/// What an entry's payload is; each kind has its own subdirectory.
enum class EntryKind : std::uint32_t {
  spirv = 1,              ///< SPIR-V words of a run-time compiled GLSL kernel
  vk_pipeline_cache = 2,  ///< VkPipelineCache data of one pipeline
  gl_program_binary = 3,  ///< glGetProgramBinary output (with its format)
  cuda_binary = 4,        ///< cubin (or PTX) for one SM
  selection = 5,          ///< device-selection / calibration results
};

/// The most bytes of an entry's label (DiskStore::store cuts a longer one; a header declaring more
/// is rejected as "size").
inline constexpr std::uint32_t kMaxLabelBytes = 1024;

/// Returns the kind's short name, also its directory name: "spirv", "vkpc", "glbin", "cubin",
/// "select" ("unknown" for a value outside the enum).
std::string_view to_string(EntryKind kind) noexcept;

/// Where and whether the L2 store keeps its entries. A plain value.
struct DiskStoreOptions {
  std::filesystem::path directory;         ///< root directory; entries live under <directory>/v<format>/
  bool enabled = true;                     ///< false: every load/store is a no-op (L1 only)
  std::uint64_t max_bytes = 512ull << 20;  ///< cap on the bytes of all entry files of this format

  /// Returns the cache settings of config (cache_dir, cache_enabled, cache_max_bytes).
  static DiskStoreOptions from(const Config& config);
  /// Reads the environment now, through vgpu::Config::from_env(): VGPU_CACHE_DIR (else
  /// $XDG_CACHE_HOME/vgpu, else $HOME/.cache/vgpu), VGPU_CACHE_DISABLE, VGPU_CACHE_MAX_BYTES;
  /// a bad value logs a warning with a Fix hint and keeps the default.
  static DiskStoreOptions from_env();
};

/// Counters of one DiskStore since it was created (this process only). A plain value.
struct DiskStoreStats {
  std::uint64_t hits = 0;            ///< loads that returned a payload
  std::uint64_t misses = 0;          ///< loads that returned nothing (absent or rejected entry)
  std::uint64_t writes = 0;          ///< entries written
  std::uint64_t write_failures = 0;  ///< stores that could not write their entry
  std::uint64_t evictions = 0;       ///< entries deleted by the size cap
  /// Entries rejected, by reason: "magic", "version", "header" (header checksum), "kind", "key",
  /// "fingerprint", "size", "checksum" (payload), "truncated", "type" (not a regular file: left
  /// alone, never deleted), "unreadable" (cannot be opened), "name" (remove_invalid only), "invalid" (a payload
  /// unsound for its kind: vgpu/cache/payload_check.hpp), or
  /// whatever a backend passed to reject() ("driver", ...).
  std::map<std::string, std::uint64_t> rejected;
};

/// One thing list() found: an entry file, anything else in a kind folder, or a v<format> or
/// kind folder that cannot be used (a symlink, a file, no permission). A plain value.
struct DiskEntryInfo {
  std::filesystem::path path;
  EntryKind kind = EntryKind::spirv;                             ///< from the entry's folder (spirv for v<format>)
  std::string key_hex;                                           ///< from the file name (32 hex digits when well named)
  std::uint64_t file_bytes = 0, payload_bytes = 0, cost_us = 0;  ///< the last two from the header
  bool valid = false;
  std::string problem;           ///< "<reason>: <details>" when !valid, reason as in DiskStoreStats
  std::string fingerprint_text;  ///< the device fingerprint the entry was written for
  std::string label;             ///< what the entry holds, from the header (a kernel's name, "pipeline cache", ...)
  std::int64_t mtime_ns = 0;     ///< the file's modification time (ns since the epoch): written, or last hit
  bool folder = false;           ///< path is an unusable v<format> or kind folder (never valid)
  /// A regular file named like an entry (<32 hex>.vgc): the only kind of thing clear() and
  /// remove_invalid() delete. Anything else is reported and left alone.
  bool deletable = false;
  std::string fix;  ///< when !valid and not deletable: what the user can do about it
};

/// Something clear() or remove_invalid() left in place, and why. A plain value.
struct DiskLeftover {
  DiskEntryInfo item;   ///< what it is (problem empty for a valid entry that could not be deleted)
  std::string why;      ///< a sentence saying why it is still there, ending with a "Fix: ..." hint
  bool failed = false;  ///< true: deleting it was tried and the system refused (why has the errno text)
};

/// The L2 cache: immutable entry files named by kind and key, each a checksummed header and a
/// payload, written to a temp file and renamed into place (readers never see a partial entry;
/// of two writers of one key the last rename wins, whole). An entry that fails any check is
/// deleted and counted, and load() reports a miss: a bad cache costs a recompile, never a crash.
/// A directory that cannot be created or written disables the store with one warning.
/// The directory is untrusted input: no symlink below the user's directory is followed, only
/// regular files are opened (non-blocking), and only regular files with entry or temp names
/// are ever deleted (docs/cache-format.md, "The directory is untrusted input").
/// Thread-safety: every member is safe from several threads and several processes at once.
class DiskStore {
 public:
  /// Returns the process-wide store, created on first use from DiskStoreOptions::from_env().
  static DiskStore& global();

  /// Opens (creating it when missing) options.directory and checks that it is writable by
  /// creating a temp file there; when that fails the store is disabled and one warning naming
  /// the directory is logged (once per directory per process). Never throws for I/O problems.
  explicit DiskStore(DiskStoreOptions options);
  ~DiskStore();
  DiskStore(const DiskStore&) = delete;
  DiskStore& operator=(const DiskStore&) = delete;

  /// Returns false when disabled by the options or when the directory is unusable.
  bool enabled() const noexcept;
  /// Returns the root directory from the options.
  const std::filesystem::path& directory() const noexcept;
  /// Returns the options the store was made with.
  const DiskStoreOptions& options() const noexcept;

  /// Returns the payload stored for (kind, key) on the device fp, or nothing when absent or
  /// invalid. Checks magic, format version, header checksum, kind, key, fingerprint text, exact
  /// file size, payload checksum and the payload itself (payload_problem: SPIR-V validated,
  /// ...); an entry failing one is deleted and counted in
  /// stats().rejected. A non-regular file at the entry's name is never opened or deleted (a
  /// "type" rejection, one warning per path); an unusable kind folder is a miss (outcome
  /// disabled, one warning per folder). A hit refreshes the entry's modification time (its LRU age).
  /// *outcome (when given) says why nothing came back, so callers can count rejections apart.
  std::optional<std::vector<std::uint8_t>> load(EntryKind kind, const KernelKey& key, const DeviceFingerprint& fp,
                                                LoadOutcome* outcome = nullptr);

  /// Writes payload as the entry for (kind, key) on fp, replacing any previous one atomically;
  /// cost_us (how long the payload took to build) decides what the size cap evicts first, and
  /// label (the kernel's name, or what else the entry is) is kept in the header for people
  /// (`vgpu-probe cache list`), cut to kMaxLabelBytes at a UTF-8 character boundary.
  /// Returns whether the entry was written (false when disabled, on an I/O failure, when the
  /// kind's folder is unusable, when a non-regular file holds the entry's name, or when the
  /// entry alone would exceed max_bytes). Folders removed meanwhile (rm -rf) are made again.
  /// May evict entries afterwards to respect the cap.
  bool store(EntryKind kind, const KernelKey& key, const DeviceFingerprint& fp, std::span<const std::uint8_t> payload,
             std::uint64_t cost_us, std::string_view label = {});

  /// Deletes the entry for (kind, key) (a regular file only) because the driver refused its
  /// payload, and counts it in stats().rejected[reason] (e.g. "driver").
  void reject(EntryKind kind, const KernelKey& key, std::string_view reason);

  /// Returns a copy of this store's counters.
  DiskStoreStats stats() const;

  /// Returns everything in the kind folders of the current format (temp files of writers in
  /// progress excluded), checking each entry's header; verify also reads each payload and
  /// checks its checksum and payload_problem(). Non-entries (other names, symlinks, FIFOs, devices, sockets,
  /// directories) are listed as invalid and never opened; unusable folders are listed too
  /// (DiskEntryInfo::folder). Works on the directory even when loads and stores are disabled.
  std::vector<DiskEntryInfo> list(bool verify) const;
  /// Deletes every deletable entry that list(true) would report invalid (and temp files
  /// abandoned for more than ten minutes); returns how many entries it deleted. *left (when
  /// given) receives every invalid thing still there afterwards, with why.
  std::uint64_t remove_invalid(std::vector<DiskLeftover>* left = nullptr);
  /// Deletes every entry file of the current format (valid or not, without reading it) and
  /// temp files abandoned for more than a minute; returns how many entries it deleted. *left
  /// (when given) receives what it could not or would not delete, with why.
  std::uint64_t clear(std::vector<DiskLeftover>* left = nullptr);
  /// As clear(), for the entry files of one kind only (e.g. EntryKind::selection: every stored
  /// device choice, pointer and prediction model, the compiled kernels kept).
  std::uint64_t clear_kind(EntryKind kind, std::vector<DiskLeftover>* left = nullptr);
  /// Deletes the entry files pick chooses, each described (header read, verify: payload too) as
  /// list(verify) describes it; pick sees only regular files with entry names, so nothing else
  /// can be chosen. Temp files are left alone. Returns how many entries it deleted; *left (when
  /// given) receives what it chose but could not delete, and unusable folders, with why. For
  /// `vgpu-probe cache clear|verify --fix --device` (the entries of one device).
  std::uint64_t remove_matching(bool verify, const std::function<bool(const DiskEntryInfo&)>& pick,
                                std::vector<DiskLeftover>* left = nullptr);

 private:
  // clear() and clear_kind(): the entries of *only's kind, or of every kind when it is null.
  std::uint64_t clear_matching(const EntryKind* only, std::vector<DiskLeftover>* left);
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace vgpu::cache
