// SPDX-License-Identifier: Apache-2.0
// core/src/cache_bundle.cpp — export_cache_bundle / import_cache_bundle (vgpu/cache_bundle.hpp).
// A bundle is read in two passes: the first checks the whole structure (header, manifest,
// sizes adding up to the file) and writes nothing, so a corrupt or hostile file leaves the
// cache directory as it was; the second checks each payload and writes the good ones through
// DiskStore::store (temp file + atomic rename), never by path. Layout: docs/cache-format.md.
#include "vgpu/cache_bundle.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <string_view>

#include "vgpu/cache/disk_store.hpp"
#include "vgpu/cache/kernel_key.hpp"
#include "vgpu/cache/payload_check.hpp"
#include "vgpu/error.hpp"
#include "vgpu/runtime.hpp"
#include "vgpu/version.hpp"

namespace vgpu {
namespace {

using cache::EntryKind;

constexpr std::string_view kBundleMagic{"VGPUBNDL", 8};
constexpr std::size_t kHeaderBytes = 32;  // magic, version, flags, manifest size, manifest checksum
constexpr std::uint32_t kMaxFingerprintBytes = 64 * 1024;  // as the entry format allows
constexpr EntryKind kKinds[] = {EntryKind::spirv, EntryKind::vk_pipeline_cache, EntryKind::gl_program_binary,
                                EntryKind::cuda_binary, EntryKind::selection};
constexpr const char* kFixBundle =
    "export the bundle again with `vgpu-probe cache export FILE` from the machine that built it, and copy it whole";

/// Returns v as 16 lower-case hex digits.
std::string hex16(std::uint64_t v) {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(v));
  return text;
}

/// Returns XXH3_64 of bytes (the checksum the entry format uses too).
std::uint64_t checksum(std::span<const std::uint8_t> bytes) {
  return cache::hash64(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

/// Returns the kind whose directory name is name.
std::optional<EntryKind> parse_kind(std::string_view name) {
  for (EntryKind k : kKinds)
    if (cache::to_string(k) == name) return k;
  return std::nullopt;
}

void put_u32(std::vector<std::uint8_t>& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}
void put_u64(std::vector<std::uint8_t>& out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}
std::uint64_t get_le(const std::uint8_t* p, int bytes) {
  std::uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = v << 8 | p[i];
  return v;
}

/// pread()s exactly n bytes at offset; false at end of file or on error.
bool read_exact(int fd, void* buffer, std::size_t n, std::uint64_t offset) {
  auto* p = static_cast<std::uint8_t*>(buffer);
  while (n > 0) {
    const ssize_t got = ::pread(fd, p, n, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    p += got;
    n -= static_cast<std::size_t>(got);
    offset += static_cast<std::uint64_t>(got);
  }
  return true;
}

/// Writes all n bytes; false on error.
bool write_exact(int fd, const void* buffer, std::size_t n) {
  const auto* p = static_cast<const std::uint8_t*>(buffer);
  while (n > 0) {
    const ssize_t put = ::write(fd, p, n);
    if (put < 0 && errno == EINTR) continue;
    if (put <= 0) return false;
    p += put;
    n -= static_cast<std::size_t>(put);
  }
  return true;
}

/// Closes a descriptor when it goes out of scope.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

/// Throws the one error a structurally bad bundle gets.
[[noreturn]] void bad_bundle(const std::filesystem::path& file, const std::string& what) {
  fail(ErrorCategory::invalid_argument,
       "cache bundle " + file.string() + " is not usable: " + what + "; nothing was imported.", kFixBundle);
}

/// The key a persisted selection is stored under (core/src/selection_store.cpp's key_of): a
/// selection's fingerprint text is its key text, so its key can be checked against it.
cache::KernelKey selection_key(const std::string& key_text) {
  return cache::KernelKey{cache::hash64("vgpu.selection.hi|" + key_text),
                          cache::hash64("vgpu.selection.lo|" + key_text)};
}

/// One manifest entry, as pass 1 read it.
struct Planned {
  CacheBundleEntry report;
  std::optional<EntryKind> kind;
  std::optional<cache::KernelKey> key;
  std::string fingerprint_text;
  std::uint64_t fingerprint_hash = 0, size = 0, xxh3 = 0, cost_us = 0, offset = 0;
  std::string problem;  // a per-entry rejection found in pass 1
};

/// Returns field name of entry as an unsigned number, or throws the bundle error.
std::uint64_t number_field(const nlohmann::json& entry, const char* name, const std::filesystem::path& file,
                           std::size_t index) {
  const auto it = entry.find(name);
  if (it == entry.end() || !it->is_number_unsigned())
    bad_bundle(file, "manifest entry " + std::to_string(index) + " has no unsigned \"" + name + "\"");
  return it->get<std::uint64_t>();
}

/// Returns field name of entry as a string, or throws the bundle error.
std::string string_field(const nlohmann::json& entry, const char* name, const std::filesystem::path& file,
                         std::size_t index) {
  const auto it = entry.find(name);
  if (it == entry.end() || !it->is_string())
    bad_bundle(file, "manifest entry " + std::to_string(index) + " has no string \"" + name + "\"");
  return it->get<std::string>();
}

/// Parses 16 hex digits (fingerprint hashes and checksums in the manifest).
std::optional<std::uint64_t> parse_hex16(const std::string& text) {
  if (text.size() != 16) return std::nullopt;
  const auto key = cache::KernelKey::from_hex(std::string(16, '0') + text);
  if (!key) return std::nullopt;
  return key->lo;
}

/// Says whether an entry's fingerprint belongs to this machine: a kernel entry's is one of the
/// local devices'; a selection's key text lists every device of its runtime as id=<hash hex>,
/// all of which must be local.
bool is_local(EntryKind kind, const std::string& text, std::uint64_t hash, const std::set<std::uint64_t>& local) {
  if (kind != EntryKind::selection) return local.count(hash) != 0;
  // A pointer to a class's last selection names no device in its key (selection_service.cpp);
  // whoever follows it checks the chosen backend's devices then, so it fits any machine.
  if (text.starts_with("select-last;")) return true;
  const auto at = text.find("devices=");
  if (at == std::string::npos) return false;
  std::string_view rest = std::string_view(text).substr(at + 8);
  if (rest.empty()) return false;
  while (!rest.empty()) {
    const auto comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    const auto eq = item.rfind('=');
    const auto value = eq == std::string_view::npos ? std::nullopt : parse_hex16(std::string(item.substr(eq + 1)));
    if (!value || local.count(*value) == 0) return false;
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  return true;
}

}  // namespace

CacheBundleReport export_cache_bundle(const std::filesystem::path& cache_dir, const std::filesystem::path& file) {
  std::error_code ec;
  if (!std::filesystem::is_directory(cache_dir, ec))
    fail(ErrorCategory::io, "kernel cache directory " + cache_dir.string() + " does not exist, so there is nothing to export.",
         "set VGPU_CACHE_DIR to the cache directory to export, or run the workload once to fill it");
  cache::DiskStoreOptions options;
  options.directory = cache_dir;
  options.enabled = true;  // read even when VGPU_CACHE_DISABLE is set: maintenance works on the directory
  options.max_bytes = std::numeric_limits<std::uint64_t>::max();
  cache::DiskStore store(options);
  // The store reads only where it can also write (it takes the directory's locks and probes it
  // once); without that every entry would come out "skipped", which reads like damage.
  if (!store.enabled())
    fail(ErrorCategory::io,
         "kernel cache directory " + cache_dir.string() + " cannot be exported: vgpu does not use it (it is not "
         "writable or not a plain directory; the warning above says which), so its entries cannot be read safely.",
         "export as a user who can write the directory, or copy it (cp -a) to a writable place and export the copy");

  CacheBundleReport report;
  report.bundle = file;
  report.directory = cache_dir;
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  std::vector<std::vector<std::uint8_t>> payloads;
  std::set<std::string> fingerprints;
  for (const cache::DiskEntryInfo& e : store.list(true)) {
    if (e.folder) continue;
    CacheBundleEntry entry;
    entry.kind = std::string(cache::to_string(e.kind));
    entry.key = e.key_hex;
    entry.fingerprint = hex16(cache::hash64(e.fingerprint_text));
    entry.bytes = e.payload_bytes;
    const auto key = cache::KernelKey::from_hex(e.key_hex);
    std::optional<std::vector<std::uint8_t>> payload;
    if (e.valid && key) payload = store.load(e.kind, *key, DeviceFingerprint{e.fingerprint_text, cache::hash64(e.fingerprint_text)});
    if (!payload) {
      entry.status = "skipped";
      entry.reason = (e.valid ? "changed while it was read" : e.problem) +
                     ". Fix: run `vgpu-probe cache verify --fix`, then export again";
      ++report.skipped;
      report.entries.push_back(std::move(entry));
      continue;
    }
    entry.status = "exported";
    fingerprints.insert(entry.fingerprint);
    list.push_back({{"kind", entry.kind},
                    {"key", entry.key},
                    {"fingerprint", entry.fingerprint},
                    {"fingerprint_text", e.fingerprint_text},
                    {"size", payload->size()},
                    {"xxh3", hex16(checksum(*payload))},
                    {"cost_us", e.cost_us}});
    ++report.exported;
    report.entries.push_back(std::move(entry));
    payloads.push_back(std::move(*payload));
  }
  report.fingerprints.assign(fingerprints.begin(), fingerprints.end());

  nlohmann::ordered_json manifest;
  manifest["format"] = "vgpu-cache-bundle";
  manifest["bundle_version"] = kCacheBundleVersion;
  manifest["cache_format"] = kCacheFormatVersion;
  manifest["vgpu_version"] = std::to_string(kVersionMajor) + "." + std::to_string(kVersionMinor) + "." +
                             std::to_string(kVersionPatch);
  manifest["entries"] = std::move(list);
  const std::string text = manifest.dump();
  std::vector<std::uint8_t> header(kBundleMagic.begin(), kBundleMagic.end());
  put_u32(header, kCacheBundleVersion);
  put_u32(header, 0);  // flags, none yet
  put_u64(header, text.size());
  put_u64(header, cache::hash64(text));

  // Temp file next to the target, renamed over it: a reader never sees half a bundle.
  std::string temp = file.string() + ".tmp-XXXXXX";
  Fd out{::mkstemp(temp.data())};
  const auto write_failed = [&](const char* what) {
    const std::string why = std::strerror(errno);
    ::unlink(temp.c_str());
    fail(ErrorCategory::io, std::string("cannot ") + what + " cache bundle " + file.string() + ": " + why + ".",
         "choose a FILE in a writable directory with enough free space");
  };
  if (out.fd < 0) write_failed("create");
  bool ok = write_exact(out.fd, header.data(), header.size()) && write_exact(out.fd, text.data(), text.size());
  for (const auto& p : payloads) ok = ok && write_exact(out.fd, p.data(), p.size());
  if (!ok) write_failed("write");
  ::fchmod(out.fd, 0644);
  if (::close(out.fd) != 0) {
    out.fd = -1;
    write_failed("write");
  }
  out.fd = -1;
  if (::rename(temp.c_str(), file.c_str()) != 0) write_failed("rename the temp file onto");
  return report;
}

CacheBundleReport import_cache_bundle(const std::filesystem::path& file, const std::filesystem::path& cache_dir,
                                      const std::optional<std::vector<DeviceFingerprint>>& local_fingerprints,
                                      const CacheBundleLimits& limits) {
  // Pass 1: the structure. Nothing is written until all of it holds.
  Fd in{::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)};
  if (in.fd < 0)
    fail(ErrorCategory::io, "cannot open cache bundle " + file.string() + ": " + std::strerror(errno) + ".",
         "check the path and that the file is readable");
  struct stat st{};
  if (::fstat(in.fd, &st) != 0 || !S_ISREG(st.st_mode)) bad_bundle(file, "it is not a regular file");
  const auto file_bytes = static_cast<std::uint64_t>(st.st_size);
  if (file_bytes > limits.max_file_bytes)
    bad_bundle(file, "it has " + std::to_string(file_bytes) + " bytes, more than the limit of " +
                         std::to_string(limits.max_file_bytes));
  std::uint8_t header[kHeaderBytes] = {};
  const std::size_t head = static_cast<std::size_t>(std::min<std::uint64_t>(file_bytes, kHeaderBytes));
  if (!read_exact(in.fd, header, head, 0)) bad_bundle(file, "it cannot be read");
  if (std::memcmp(header, kBundleMagic.data(), std::min(head, kBundleMagic.size())) != 0)
    bad_bundle(file, "it does not start with the bundle magic VGPUBNDL (not a vgpu cache bundle)");
  if (head < kHeaderBytes) bad_bundle(file, "it is truncated (" + std::to_string(file_bytes) + " bytes, no whole header)");
  const auto version = static_cast<std::uint32_t>(get_le(header + 8, 4));
  if (version > kCacheBundleVersion)
    fail(ErrorCategory::not_supported,
         "cache bundle " + file.string() + " has format version " + std::to_string(version) +
             ", newer than the version " + std::to_string(kCacheBundleVersion) +
             " this vgpu reads; nothing was imported.",
         "import it with the vgpu version that exported it (or a newer one), or export it again with this one");
  if (version == 0) bad_bundle(file, "its format version is 0");
  const std::uint64_t manifest_bytes = get_le(header + 16, 8);
  if (manifest_bytes > limits.max_manifest_bytes)
    bad_bundle(file, "its manifest declares " + std::to_string(manifest_bytes) + " bytes, more than the limit of " +
                         std::to_string(limits.max_manifest_bytes));
  if (manifest_bytes > file_bytes - kHeaderBytes) bad_bundle(file, "it is truncated inside the manifest");
  std::string text(static_cast<std::size_t>(manifest_bytes), '\0');
  if (!read_exact(in.fd, text.data(), text.size(), kHeaderBytes)) bad_bundle(file, "it is truncated inside the manifest");
  if (cache::hash64(text) != get_le(header + 24, 8)) bad_bundle(file, "its manifest checksum does not match");
  nlohmann::json manifest;
  try {
    manifest = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    bad_bundle(file, std::string("its manifest is not JSON (") + e.what() + ")");
  }
  if (!manifest.is_object() || manifest.value("format", std::string()) != "vgpu-cache-bundle")
    bad_bundle(file, "its manifest is not a vgpu-cache-bundle manifest");
  const auto entries_it = manifest.find("entries");
  if (entries_it == manifest.end() || !entries_it->is_array()) bad_bundle(file, "its manifest has no \"entries\" array");
  if (entries_it->size() > limits.max_entries)
    bad_bundle(file, "its manifest lists " + std::to_string(entries_it->size()) + " entries, more than the limit of " +
                         std::to_string(limits.max_entries));
  const auto cache_format = manifest.find("cache_format");
  const bool same_cache_format = cache_format != manifest.end() && cache_format->is_number_unsigned() &&
                                 cache_format->get<std::uint64_t>() == kCacheFormatVersion;

  std::vector<Planned> plan;
  plan.reserve(entries_it->size());
  std::uint64_t offset = kHeaderBytes + manifest_bytes;
  for (std::size_t i = 0; i < entries_it->size(); ++i) {
    const nlohmann::json& e = (*entries_it)[i];
    if (!e.is_object()) bad_bundle(file, "manifest entry " + std::to_string(i) + " is not an object");
    Planned p;
    p.size = number_field(e, "size", file, i);
    if (p.size > limits.max_entry_bytes)
      bad_bundle(file, "manifest entry " + std::to_string(i) + " declares " + std::to_string(p.size) +
                           " payload bytes, more than the limit of " + std::to_string(limits.max_entry_bytes));
    if (p.size > file_bytes - offset)
      bad_bundle(file, "it is truncated: manifest entry " + std::to_string(i) + " runs past the end of the file");
    p.offset = offset;
    offset += p.size;
    p.cost_us = number_field(e, "cost_us", file, i);
    p.report.kind = string_field(e, "kind", file, i);
    p.report.key = string_field(e, "key", file, i);
    p.report.fingerprint = string_field(e, "fingerprint", file, i);
    p.fingerprint_text = string_field(e, "fingerprint_text", file, i);
    p.report.bytes = p.size;
    const std::string xxh3 = string_field(e, "xxh3", file, i);
    // Per-entry problems: this entry is refused, the others still go in.
    p.kind = parse_kind(p.report.kind);
    p.key = cache::KernelKey::from_hex(p.report.key);
    const auto fp_hash = parse_hex16(p.report.fingerprint);
    const auto sum = parse_hex16(xxh3);
    if (!same_cache_format)
      p.problem = "cache format of the bundle is not " + std::to_string(kCacheFormatVersion);
    else if (!p.kind)
      p.problem = "kind \"" + p.report.kind + "\" is not one of spirv, vkpc, glbin, cubin, select";
    else if (!p.key)
      p.problem = "name: key \"" + p.report.key + "\" is not 32 lower-case hex digits (a path-unsafe name)";
    else if (!fp_hash || !sum)
      p.problem = "fingerprint hash or xxh3 is not 16 lower-case hex digits";
    else if (p.fingerprint_text.size() > kMaxFingerprintBytes)
      p.problem = "size: fingerprint text longer than " + std::to_string(kMaxFingerprintBytes) + " bytes";
    else if (cache::hash64(p.fingerprint_text) != *fp_hash)
      p.problem = "fingerprint: the hash does not match the fingerprint text";
    else if (*p.kind == EntryKind::selection && selection_key(p.fingerprint_text) != *p.key)
      p.problem = "key: the key is not the one of the selection's key text";
    else if (*p.kind == EntryKind::vk_pipeline_cache &&
             !(p.key->hi == cache::hash64("vk-pipeline-cache") && p.key->lo == *fp_hash))
      p.problem = "key: a pipeline-cache key must be derived from its fingerprint";
    p.fingerprint_hash = fp_hash.value_or(0);
    p.xxh3 = sum.value_or(0);
    plan.push_back(std::move(p));
  }
  if (offset != file_bytes)
    bad_bundle(file, "it has " + std::to_string(file_bytes - offset) + " bytes after the last payload the manifest lists");

  std::set<std::uint64_t> local;
  if (local_fingerprints) {
    for (const auto& fp : *local_fingerprints) local.insert(fp.hash);
  } else {
    for (const auto& info : Runtime::global().devices()) local.insert(info.fingerprint.hash);
  }

  // Pass 2: each entry on its own, written through the store.
  cache::DiskStoreOptions options = cache::DiskStoreOptions::from_env();  // the size cap bounds the disk used
  options.directory = cache_dir;
  options.enabled = true;
  std::optional<cache::DiskStore> store;
  CacheBundleReport report;
  report.bundle = file;
  report.directory = cache_dir;
  std::set<std::string> fingerprints;
  for (Planned& p : plan) {
    CacheBundleEntry& r = p.report;
    fingerprints.insert(r.fingerprint);
    std::vector<std::uint8_t> payload;
    if (p.problem.empty()) {
      payload.resize(static_cast<std::size_t>(p.size));
      if (!read_exact(in.fd, payload.data(), payload.size(), p.offset))
        p.problem = "truncated: the bundle shrank while it was read";
      else if (checksum(payload) != p.xxh3)
        p.problem = "checksum: the payload's xxh3 does not match the manifest (damaged in transit)";
      else if (const std::string bad = cache::payload_problem(*p.kind, payload); !bad.empty())
        p.problem = "invalid: " + bad;
    }
    if (p.problem.empty()) {
      r.this_machine = is_local(*p.kind, p.fingerprint_text, p.fingerprint_hash, local);
      if (!store) {
        store.emplace(options);
        if (!store->enabled())
          fail(ErrorCategory::io, "kernel cache directory " + cache_dir.string() + " is not usable (see the warning above).",
               "set VGPU_CACHE_DIR to a writable directory");
      }
      const DeviceFingerprint fp{p.fingerprint_text, p.fingerprint_hash};
      const auto existing = store->load(*p.kind, *p.key, fp);
      if (existing && *existing == payload) {
        r.status = "present";
        ++report.present;
      } else if (existing) {
        p.problem = "conflict: the cache already holds a different payload for this key (kept)";
      } else if (store->store(*p.kind, *p.key, fp, payload, p.cost_us)) {
        r.status = "imported";
        ++report.imported;
      } else {
        p.problem = "write: the store could not write the entry (see the warning above)";
      }
      if (p.problem.empty() && !r.this_machine) ++report.other_fingerprint_entries;
    }
    if (!p.problem.empty()) {
      r.status = "rejected";
      r.reason = p.problem + ". Fix: " +
                 (p.problem.rfind("conflict", 0) == 0
                      ? std::string("run `vgpu-probe cache clear` first to replace the entry, or keep the existing one")
                      : std::string(kFixBundle));
      ++report.rejected;
    }
    report.entries.push_back(std::move(r));
  }
  report.fingerprints.assign(fingerprints.begin(), fingerprints.end());
  return report;
}

}  // namespace vgpu
