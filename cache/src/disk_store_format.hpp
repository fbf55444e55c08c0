// SPDX-License-Identifier: Apache-2.0
// cache/src/disk_store_format.hpp — the L2 entry file format (internal to cache/src):
// encoding a header, reading and checking one from an open file, and the small helpers the
// store and its maintenance functions share. Layout: docs/cache-format.md, "Entry file".
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "vgpu/cache/disk_store.hpp"
#include "vgpu/cache/kernel_key.hpp"
#include "vgpu/platform/files.hpp"

namespace vgpu::cache::detail {

/// The first 8 bytes of every entry.
inline constexpr std::string_view kMagic{"VGPUCACH", 8};
/// Bytes before the fingerprint text: magic, version, kind, key, fingerprint hash, text length.
inline constexpr std::size_t kPrefixBytes = 44;
/// The label length (u32) between the fingerprint text and the label.
inline constexpr std::size_t kLabelLengthBytes = 4;
/// Bytes after the label: payload size, payload checksum, cost_us, header checksum.
inline constexpr std::size_t kSuffixBytes = 32;
/// A longer fingerprint text marks the header as corrupt.
inline constexpr std::uint32_t kMaxFingerprintBytes = 64 * 1024;
/// Entry files end in this; temp files of writers in progress start with kTempPrefix.
inline constexpr std::string_view kEntrySuffix = ".vgc";
inline constexpr std::string_view kTempPrefix = ".tmp-";

/// An entry's header as decoded from disk.
struct EntryHeader {
  std::uint32_t version = 0, kind = 0;
  KernelKey key;
  std::uint64_t fingerprint_hash = 0;
  std::string fingerprint_text;
  std::string label;
  std::uint64_t payload_bytes = 0, payload_checksum = 0, cost_us = 0;
  std::size_t header_bytes = 0;  ///< kPrefixBytes + text length + kLabelLengthBytes + label length + kSuffixBytes
};

/// Why an entry is unusable: reason is one of DiskStoreStats::rejected's keys, details a
/// sentence for humans. Empty reason = no problem.
struct Problem {
  std::string reason, details;
  explicit operator bool() const noexcept { return !reason.empty(); }
  /// Returns "<reason>: <details>".
  std::string text() const { return reason + ": " + details; }
};

/// Returns the header bytes (with its checksum) of an entry holding payload; label must be at
/// most kMaxLabelBytes (label_prefix cuts one).
std::vector<std::uint8_t> encode_header(EntryKind kind, const KernelKey& key, std::string_view fingerprint_text,
                                        std::string_view label, std::span<const std::uint8_t> payload,
                                        std::uint64_t cost_us);

/// Returns label cut to at most kMaxLabelBytes, at a UTF-8 character boundary (never inside a
/// multi-byte sequence, so the header holds whole characters).
std::string_view label_prefix(std::string_view label) noexcept;

/// Reads the header of the open entry file f whose size is file_size and checks what can be
/// checked without a caller's expectations: magic, format version, text length, header
/// checksum, fingerprint hash, label length, and that the file holds exactly header + payload bytes.
/// Sets problem (and returns nothing) on the first failed check.
std::optional<EntryHeader> read_header(const platform::File& f, std::uint64_t file_size, Problem& problem);

/// Checks the header against what the caller asked for: kind, then key. Returns the first
/// failure (empty when both match).
Problem check_identity(const EntryHeader& header, EntryKind kind, const KernelKey& key);

/// Reads the payload that follows header in f and checks its checksum; nothing + problem on
/// failure (a short read is "truncated": the file shrank under us).
std::optional<std::vector<std::uint8_t>> read_payload(const platform::File& f, const EntryHeader& header,
                                                      Problem& problem);

/// Checks the open regular file f (file_size bytes) as the entry of kind under key, in the
/// order of docs/cache-format.md: the header (read_header), kind and key (check_identity), the
/// fingerprint text when fingerprint_text is given, then, when payload is given, reads the
/// payload into it and checks its checksum. The one place load() and list() check an entry, so
/// a per-kind payload check belongs at the end of it. Returns the header whenever it could be
/// read (also when a later check failed); sets problem on the first failed check.
std::optional<EntryHeader> check_entry(const platform::File& f, std::uint64_t file_size, EntryKind kind,
                                       const KernelKey& key, const std::string* fingerprint_text,
                                       std::vector<std::uint8_t>* payload, Problem& problem);

/// Returns whether value names an EntryKind.
bool is_entry_kind(std::uint32_t value) noexcept;
/// Every kind, in enum order.
inline constexpr EntryKind kAllKinds[] = {EntryKind::spirv, EntryKind::vk_pipeline_cache, EntryKind::gl_program_binary,
                                          EntryKind::cuda_binary, EntryKind::selection};

}  // namespace vgpu::cache::detail
