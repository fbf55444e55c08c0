// SPDX-License-Identifier: Apache-2.0
// core/runtime/kernel_cache/cache_bundle_format.hpp — what the bundle writer (cache_bundle.cpp) and the bundle
// reader (cache_bundle_import.cpp) share: the header layout, the kinds, the checksum and the
// raw I/O helpers. Layout: docs/cache-format.md, "Cache bundles". Internal to the runtime; every
// function is thread-safe (no state).
#pragma once

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "vgpu/cache/disk_store.hpp"
#include "vgpu/cache/kernel_key.hpp"
#include "vgpu/cache_bundle.hpp"
#include "vgpu/platform/files.hpp"

namespace vgpu::detail::bundle {

inline constexpr std::string_view kMagic{"VGPUBNDL", 8};
inline constexpr std::size_t kHeaderBytes = 32;  // magic, version, flags, manifest size, manifest checksum
inline constexpr std::uint32_t kMaxFingerprintBytes = 64 * 1024;  // as the entry format allows
inline constexpr cache::EntryKind kKinds[] = {cache::EntryKind::spirv, cache::EntryKind::vk_pipeline_cache,
                                              cache::EntryKind::gl_program_binary, cache::EntryKind::cuda_binary,
                                              cache::EntryKind::selection};
inline constexpr const char* kFixBundle =
    "export the bundle again with `vgpu-probe cache export FILE` from the machine that built it, and copy it whole";

/// Returns v as 16 lower-case hex digits.
inline std::string hex16(std::uint64_t v) {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(v));
  return text;
}

/// Returns XXH3_64 of bytes (the checksum the entry format uses too).
inline std::uint64_t checksum(std::span<const std::uint8_t> bytes) {
  return cache::hash64(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

/// Returns the kind whose directory name is name.
inline std::optional<cache::EntryKind> parse_kind(std::string_view name) {
  for (cache::EntryKind k : kKinds)
    if (cache::to_string(k) == name) return k;
  return std::nullopt;
}

/// Appends v little-endian in bytes bytes.
inline void put_le(std::vector<std::uint8_t>& out, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}

/// Reads a little-endian number of bytes bytes.
inline std::uint64_t get_le(const std::uint8_t* p, int bytes) {
  std::uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = v << 8 | p[i];
  return v;
}

/// Reads exactly n bytes at offset; false at end of file or on error.
inline bool read_exact(const platform::File& f, void* buffer, std::size_t n, std::uint64_t offset) {
  return f.read_at(buffer, n, offset) == n;
}

/// Returns the fingerprint hashes that count as this machine's; asked only once the whole
/// bundle's structure has been checked (finding the devices can take seconds).
using LocalFingerprints = std::function<std::set<std::uint64_t>()>;

/// Reads, checks and imports a bundle: import_cache_bundle without the Runtime, which the
/// caller's local supplies. Throws only vgpu::Error.
CacheBundleReport import_bundle(const std::filesystem::path& file, const std::filesystem::path& cache_dir,
                                const LocalFingerprints& local, const CacheBundleLimits& limits);

}  // namespace vgpu::detail::bundle
