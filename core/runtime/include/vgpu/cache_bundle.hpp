// SPDX-License-Identifier: Apache-2.0
// vgpu/cache_bundle.hpp — one file that carries a kernel cache (L2 entries and persisted device
// selections, of every device fingerprint) to another machine or container: export it where the
// kernels were built, import it where they should not be built again. Format and checks:
// docs/cache-format.md, "Cache bundles". Thread-safety: each call is independent; an import
// writes through the store's normal atomic path, so it is safe beside running processes.
#pragma once

#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "vgpu/device_info.hpp"
#include "vgpu/export.hpp"

namespace vgpu {

/// The bundle format version this vgpu writes and the newest it reads.
inline constexpr std::uint32_t kCacheBundleVersion = 1;

/// Limits an import applies before it allocates anything, so a hostile bundle cannot exhaust
/// memory or disk. A plain value.
struct VGPU_API CacheBundleLimits {
  std::uint64_t max_file_bytes = 4ull << 30;       ///< the whole bundle file
  std::uint64_t max_manifest_bytes = 64ull << 20;  ///< the JSON manifest
  std::uint64_t max_entry_bytes = 512ull << 20;    ///< one payload
  std::uint64_t max_entries = 1u << 20;            ///< entries in the manifest
};

/// What happened to one entry of an export or import. A plain value.
struct VGPU_API CacheBundleEntry {
  std::string kind;           ///< "spirv", "vkpc", "glbin", "cubin", "select" (as in the manifest)
  std::string key;            ///< 32 hex digits (as in the manifest, possibly malformed when rejected)
  std::string fingerprint;    ///< the entry's fingerprint hash, 16 hex digits
  std::uint64_t bytes = 0;    ///< payload bytes
  std::string status;         ///< "exported", "skipped", "imported", "present" or "rejected"
  std::string reason;         ///< why it was skipped or rejected, ending with a Fix hint; else ""
  bool this_machine = false;  ///< import: its fingerprint is one of the local devices'
};

/// The outcome of export_cache_bundle() or import_cache_bundle(). A plain value.
struct VGPU_API CacheBundleReport {
  std::filesystem::path bundle;                           ///< the bundle file
  std::filesystem::path directory;                        ///< the cache directory read or written
  std::uint64_t exported = 0, skipped = 0;                ///< export: entries written / invalid ones left out
  std::uint64_t imported = 0, present = 0, rejected = 0;  ///< import: new / identical already / refused
  std::uint64_t other_fingerprint_entries = 0;            ///< import: entries kept for devices this machine lacks
  std::vector<std::string> fingerprints;                  ///< every distinct fingerprint hash (16 hex) in the bundle
  std::vector<CacheBundleEntry> entries;                  ///< one per entry, in bundle order
};

/// Writes every valid L2 entry and persisted selection under cache_dir (all kinds, every
/// fingerprint) to the bundle file: a new file beside it, renamed over it, so a reader never
/// sees half a bundle. An existing file keeps its permission bits (and, where allowed, its
/// owner); a new one gets 0666 less the umask. Entries that fail verification (or whose
/// fingerprint text is not UTF-8) are left out and reported as "skipped". Throws vgpu::Error:
/// invalid_argument, before anything is read, when file exists and is not a regular file (a
/// symlink, FIFO, device, directory: a rename would replace it; use the std::ostream overload
/// for those); io when cache_dir does not exist or the file cannot be written (the new file is
/// removed again and file is left as it was).
VGPU_API CacheBundleReport export_cache_bundle(const std::filesystem::path& cache_dir,
                                               const std::filesystem::path& file);

/// As above, but writes the bundle to out (e.g. std::cout, for `vgpu-probe cache export -`);
/// the report's bundle is "-". Throws vgpu::Error (io) when out fails (say, a full disk or a
/// closed pipe): what was written then is not a whole bundle.
VGPU_API CacheBundleReport export_cache_bundle(const std::filesystem::path& cache_dir, std::ostream& out);

/// Reads the bundle file, checks all of it (magic, version, manifest, sizes, every payload's
/// checksum and payload check, key and fingerprint consistency, names) and writes each good
/// entry into cache_dir through the store's locked atomic path. An entry already there with the
/// same payload is "present"; one with a different payload is "rejected" (the existing entry
/// is kept). local_fingerprints decides which entries count as this machine's (default: the
/// devices of Runtime::global()); the others are still imported, for the machines they fit.
/// Throws vgpu::Error with a Fix hint, leaving cache_dir unchanged, when the file is unreadable
/// (io), of a newer bundle version (not_supported), or truncated, not a bundle or inconsistent
/// (invalid_argument: also any manifest field missing or of the wrong JSON type). No other
/// exception leaves it.
VGPU_API CacheBundleReport import_cache_bundle(
    const std::filesystem::path& file, const std::filesystem::path& cache_dir,
    const std::optional<std::vector<DeviceFingerprint>>& local_fingerprints = {}, const CacheBundleLimits& limits = {});

}  // namespace vgpu
