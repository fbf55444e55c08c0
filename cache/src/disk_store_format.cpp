// SPDX-License-Identifier: Apache-2.0
// cache/src/disk_store_format.cpp — encoding and checking L2 entry headers (little-endian,
// layout in docs/cache-format.md).
#include "disk_store_format.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "payload_check.hpp"
#include "vgpu/version.hpp"

namespace vgpu::cache {

std::string_view to_string(EntryKind kind) noexcept {
  switch (kind) {
    case EntryKind::spirv:
      return "spirv";
    case EntryKind::vk_pipeline_cache:
      return "vkpc";
    case EntryKind::gl_program_binary:
      return "glbin";
    case EntryKind::cuda_binary:
      return "cubin";
    case EntryKind::selection:
      return "select";
  }
  return "unknown";
}

namespace detail {
namespace {

/// Writes little-endian fields into a buffer sized up front (no reallocation while writing).
struct Writer {
  std::uint8_t* p;
  void u32(std::uint32_t v) {
    for (int i = 0; i < 4; ++i) *p++ = static_cast<std::uint8_t>(v >> (8 * i));
  }
  void u64(std::uint64_t v) {
    for (int i = 0; i < 8; ++i) *p++ = static_cast<std::uint8_t>(v >> (8 * i));
  }
  void bytes(std::string_view b) {
    if (!b.empty()) std::memcpy(p, b.data(), b.size());
    p += b.size();
  }
};

std::uint32_t get32(const std::uint8_t* p) {
  std::uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

std::uint64_t get64(const std::uint8_t* p) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

std::uint64_t checksum(const void* data, std::size_t n) {
  return hash64(std::string_view(static_cast<const char*>(data), n));
}

std::string hex64(std::uint64_t v) {
  char buf[19];
  std::snprintf(buf, sizeof buf, "0x%016llx", static_cast<unsigned long long>(v));
  return buf;
}

Problem problem(std::string reason, std::string details) { return Problem{std::move(reason), std::move(details)}; }

}  // namespace

std::vector<std::uint8_t> encode_header(EntryKind kind, const KernelKey& key, std::string_view fingerprint_text,
                                        std::string_view label, std::span<const std::uint8_t> payload,
                                        std::uint64_t cost_us) {
  std::vector<std::uint8_t> out(kPrefixBytes + fingerprint_text.size() + kLabelLengthBytes + label.size() +
                                kSuffixBytes);
  Writer w{out.data()};
  w.bytes(kMagic);
  w.u32(kCacheFormatVersion);
  w.u32(static_cast<std::uint32_t>(kind));
  w.u64(key.hi);
  w.u64(key.lo);
  w.u64(hash64(fingerprint_text));
  w.u32(static_cast<std::uint32_t>(fingerprint_text.size()));
  w.bytes(fingerprint_text);
  w.u32(static_cast<std::uint32_t>(label.size()));
  w.bytes(label);
  w.u64(payload.size());
  w.u64(checksum(payload.data(), payload.size()));
  w.u64(cost_us);
  w.u64(checksum(out.data(), out.size() - 8));
  return out;
}

std::string_view label_prefix(std::string_view label) noexcept {
  if (label.size() <= kMaxLabelBytes) return label;
  std::size_t n = kMaxLabelBytes;
  // Back off over continuation bytes (10xxxxxx): the cut then falls before a character's lead byte.
  while (n > 0 && (static_cast<unsigned char>(label[n]) & 0xC0) == 0x80) --n;
  return label.substr(0, n);
}

std::optional<EntryHeader> read_header(const platform::File& f, std::uint64_t file_size, Problem& why) {
  if (file_size == 0) {
    why = problem("truncated", "the file is empty");
    return std::nullopt;
  }
  std::uint8_t prefix[kPrefixBytes];
  const std::size_t got =
      f.read_at(prefix, static_cast<std::size_t>(std::min<std::uint64_t>(file_size, kPrefixBytes)), 0);
  if (got < kMagic.size() && got < file_size) {
    why = problem("truncated", "could not read the file (" + std::string(std::strerror(errno)) + ")");
    return std::nullopt;
  }
  // A file shorter than the magic is "truncated" when it is a prefix of it, else not ours.
  if (std::memcmp(prefix, kMagic.data(), std::min(got, kMagic.size())) != 0) {
    why = problem("magic", "the file does not start with \"VGPUCACH\"");
    return std::nullopt;
  }
  if (got < kPrefixBytes) {
    why = problem("truncated", "the file ends inside the header (" + std::to_string(file_size) + " bytes)");
    return std::nullopt;
  }
  EntryHeader h;
  h.version = get32(prefix + 8);
  if (h.version != kCacheFormatVersion) {
    why = problem("version", "format version " + std::to_string(h.version) + ", this vgpu reads version " +
                                 std::to_string(kCacheFormatVersion));
    return std::nullopt;
  }
  h.kind = get32(prefix + 12);
  h.key = KernelKey{get64(prefix + 16), get64(prefix + 24)};
  h.fingerprint_hash = get64(prefix + 32);
  const std::uint32_t text_bytes = get32(prefix + 40);
  if (text_bytes > kMaxFingerprintBytes) {
    why = problem("size", "fingerprint text length " + std::to_string(text_bytes) + " exceeds " +
                              std::to_string(kMaxFingerprintBytes));
    return std::nullopt;
  }
  // The label's length follows the fingerprint text: read up to it, check it, then the rest.
  const std::size_t label_at = kPrefixBytes + text_bytes + kLabelLengthBytes;
  if (file_size < label_at) {
    why = problem("truncated", "the file ends inside the header (" + std::to_string(file_size) + " of at least " +
                                   std::to_string(label_at + kSuffixBytes) + " bytes)");
    return std::nullopt;
  }
  std::vector<std::uint8_t> header(label_at);
  std::memcpy(header.data(), prefix, kPrefixBytes);
  if (f.read_at(header.data() + kPrefixBytes, label_at - kPrefixBytes, kPrefixBytes) != label_at - kPrefixBytes) {
    why = problem("truncated", "the file shrank while its header was read");
    return std::nullopt;
  }
  const std::uint32_t label_bytes = get32(header.data() + label_at - kLabelLengthBytes);
  if (label_bytes > kMaxLabelBytes) {
    why = problem("size", "label length " + std::to_string(label_bytes) + " exceeds " + std::to_string(kMaxLabelBytes));
    return std::nullopt;
  }
  h.header_bytes = label_at + label_bytes + kSuffixBytes;
  if (file_size < h.header_bytes) {
    why = problem("truncated", "the file ends inside the header (" + std::to_string(file_size) + " of " +
                                   std::to_string(h.header_bytes) + " bytes)");
    return std::nullopt;
  }
  header.resize(h.header_bytes);
  const std::size_t rest = h.header_bytes - label_at;
  if (f.read_at(header.data() + label_at, rest, label_at) != rest) {
    why = problem("truncated", "the file shrank while its header was read");
    return std::nullopt;
  }
  const std::uint8_t* suffix = header.data() + label_at + label_bytes;
  const std::uint64_t stored_sum = get64(suffix + 24);
  const std::uint64_t actual_sum = checksum(header.data(), h.header_bytes - 8);
  if (stored_sum != actual_sum) {
    why = problem("header", "header checksum " + hex64(actual_sum) + " does not match the stored " + hex64(stored_sum));
    return std::nullopt;
  }
  h.fingerprint_text.assign(reinterpret_cast<const char*>(header.data() + kPrefixBytes), text_bytes);
  if (hash64(h.fingerprint_text) != h.fingerprint_hash) {
    why = problem("header", "the fingerprint hash does not match the fingerprint text");
    return std::nullopt;
  }
  h.label.assign(reinterpret_cast<const char*>(header.data() + label_at), label_bytes);
  h.payload_bytes = get64(suffix);
  h.payload_checksum = get64(suffix + 8);
  h.cost_us = get64(suffix + 16);
  const std::uint64_t body = file_size - h.header_bytes;
  if (body < h.payload_bytes) {
    why = problem("truncated",
                  "the payload has " + std::to_string(body) + " of its " + std::to_string(h.payload_bytes) + " bytes");
    return std::nullopt;
  }
  if (body > h.payload_bytes) {
    why = problem("size",
                  "the file is " + std::to_string(body - h.payload_bytes) + " bytes longer than header + payload");
    return std::nullopt;
  }
  return h;
}

Problem check_identity(const EntryHeader& header, EntryKind kind, const KernelKey& key) {
  if (header.kind != static_cast<std::uint32_t>(kind)) {
    const std::string found = is_entry_kind(header.kind) ? std::string(to_string(static_cast<EntryKind>(header.kind)))
                                                         : std::to_string(header.kind);
    return problem("kind", "the header holds kind " + found + ", expected " + std::string(to_string(kind)));
  }
  if (!(header.key == key))
    return problem("key", "the header holds key " + header.key.hex() + ", expected " + key.hex());
  return {};
}

std::optional<std::vector<std::uint8_t>> read_payload(const platform::File& f, const EntryHeader& header,
                                                      Problem& why) {
  std::vector<std::uint8_t> payload;
  try {
    payload.resize(static_cast<std::size_t>(header.payload_bytes));
  } catch (const std::bad_alloc&) {
    why = problem("size", "the payload size " + std::to_string(header.payload_bytes) + " cannot be allocated");
    return std::nullopt;
  }
  if (f.read_at(payload.data(), payload.size(), header.header_bytes) != payload.size()) {
    why = problem("truncated", "the file shrank while its payload was read");
    return std::nullopt;
  }
  const std::uint64_t actual = checksum(payload.data(), payload.size());
  if (actual != header.payload_checksum) {
    why = problem("checksum",
                  "payload checksum " + hex64(actual) + " does not match the stored " + hex64(header.payload_checksum));
    return std::nullopt;
  }
  return payload;
}

std::optional<EntryHeader> check_entry(const platform::File& f, std::uint64_t file_size, EntryKind kind,
                                       const KernelKey& key, const std::string* fingerprint_text,
                                       std::vector<std::uint8_t>* payload, Problem& why) {
  std::optional<EntryHeader> header = read_header(f, file_size, why);
  if (!header) return header;
  why = check_identity(*header, kind, key);
  if (!why && fingerprint_text && header->fingerprint_text != *fingerprint_text)
    why = problem("fingerprint",
                  "written for the device '" + header->fingerprint_text + "', not for '" + *fingerprint_text + "'");
  if (!why && payload) {
    if (auto bytes = read_payload(f, *header, why)) {
      why = check_payload(kind, *bytes);  // SPIR-V validated, ... (payload_check.hpp)
      if (!why) *payload = std::move(*bytes);
    }
  }
  return header;
}

bool is_entry_kind(std::uint32_t value) noexcept { return value >= 1 && value <= 5; }

}  // namespace detail
}  // namespace vgpu::cache
