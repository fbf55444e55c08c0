// SPDX-License-Identifier: Apache-2.0
// core/runtime/kernel_cache/cache_bundle_import.cpp — the bundle reader behind import_cache_bundle
// (vgpu/cache_bundle.hpp). A bundle is read in two passes: the first checks the whole structure
// (header, manifest, sizes adding up to the file) and writes nothing, so a corrupt or hostile
// file leaves the cache directory as it was; the second checks each payload and writes the good
// ones through DiskStore::store (temp file + atomic rename), never by path. The manifest is read
// strictly: every field it uses must be there with its JSON type, checked before it is read, so
// no nlohmann exception can arise (and none may leave: the fuzz target vgpu-fuzz-bundle runs
// this file). Layout: docs/cache-format.md, "Cache bundles".

#include <algorithm>
#include <cstring>
#include <new>
#include <nlohmann/json.hpp>
#include <set>
#include <string_view>

#include "cache_bundle_format.hpp"
#include "vgpu/cache/payload_check.hpp"
#include "vgpu/error.hpp"
#include "vgpu/version.hpp"

namespace vgpu::detail::bundle {
namespace {

using cache::EntryKind;
using nlohmann::json;

/// Throws the one error a structurally bad bundle gets.
[[noreturn]] void bad_bundle(const std::filesystem::path& file, const std::string& what) {
  fail(ErrorCategory::invalid_argument,
       "cache bundle " + file.string() + " is not usable: " + what + "; nothing was imported.", kFixBundle);
}

/// Names a JSON value's type for messages ("a number", "null", ...).
std::string type_text(const json& v) {
  switch (v.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::object:
      return "an object";
    case json::value_t::array:
      return "an array";
    case json::value_t::string:
      return "a string";
    case json::value_t::boolean:
      return "a boolean";
    case json::value_t::number_integer:
      return "a negative integer";  // the parser's non-negative ones are unsigned
    case json::value_t::number_unsigned:
      return "an unsigned integer";
    case json::value_t::number_float:
      return "a number";
    default:
      return "not a JSON value";
  }
}

/// The key a persisted selection is stored under (core/runtime/selection/selection_store.cpp's key_of): a
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
  std::string label;  // what the entry holds, for people; "" when the manifest has none
  std::uint64_t fingerprint_hash = 0, size = 0, xxh3 = 0, cost_us = 0, offset = 0;
  std::string problem;  // a per-entry rejection found in pass 1
};

/// Reads the typed fields of one JSON object, or throws the bundle error naming where.
class Fields {
 public:
  Fields(const json& object, const std::filesystem::path& file, std::string where)
      : object_(object), file_(file), where_(std::move(where)) {}

  /// Returns field name as an unsigned integer.
  std::uint64_t number(const char* name) const {
    const json& v = get(name, json::value_t::number_unsigned);
    return v.get<std::uint64_t>();
  }
  /// Returns field name as a string.
  const std::string& string(const char* name) const {
    return get(name, json::value_t::string).get_ref<const std::string&>();
  }
  /// Returns field name, which must be an array.
  const json& array(const char* name) const { return get(name, json::value_t::array); }
  /// Returns field name as a string, or "" when the object has no such field.
  std::string optional_string(const char* name) const { return object_.contains(name) ? string(name) : std::string(); }

 private:
  const json& get(const char* name, json::value_t type) const {
    const auto it = object_.find(name);
    const char* wanted = type == json::value_t::string  ? "a string"
                         : type == json::value_t::array ? "an array"
                                                        : "an unsigned integer";
    if (it == object_.end()) bad_bundle(file_, where_ + " has no \"" + name + "\" (" + wanted + ")");
    if (it->type() != type) bad_bundle(file_, where_ + "'s \"" + name + "\" is " + type_text(*it) + ", not " + wanted);
    return *it;
  }
  const json& object_;
  const std::filesystem::path& file_;
  std::string where_;
};

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

/// Pass 1 for one manifest entry: its typed fields (a missing or mistyped one is a bundle
/// error) and the per-entry problems that reject it alone.
Planned plan_entry(const json& e, std::size_t i, bool same_cache_format, const std::filesystem::path& file) {
  const std::string where = "manifest entry " + std::to_string(i);
  if (!e.is_object()) bad_bundle(file, where + " is " + type_text(e) + ", not an object");
  const Fields f(e, file, where);
  Planned p;
  p.size = f.number("size");
  p.cost_us = f.number("cost_us");
  p.report.kind = f.string("kind");
  p.report.key = f.string("key");
  p.report.fingerprint = f.string("fingerprint");
  p.fingerprint_text = f.string("fingerprint_text");
  // Optional: bundles of cache format 1 have none (their entries are rejected below anyway).
  p.label = f.optional_string("label");
  p.report.bytes = p.size;
  const std::string& xxh3 = f.string("xxh3");
  p.kind = parse_kind(p.report.kind);
  p.key = cache::KernelKey::from_hex(p.report.key);
  const auto fp_hash = parse_hex16(p.report.fingerprint);
  const auto sum = parse_hex16(xxh3);
  if (!same_cache_format)
    p.problem = "cache format of the bundle is not " + std::to_string(kCacheFormatVersion);
  else if (!p.kind)
    p.problem = "kind \"" + p.report.kind.substr(0, 64) + "\" is not one of spirv, vkpc, glbin, cubin, select";
  else if (!p.key)
    p.problem = "name: key \"" + p.report.key.substr(0, 64) + "\" is not 32 lower-case hex digits (a path-unsafe name)";
  else if (!fp_hash || !sum)
    p.problem = "fingerprint hash or xxh3 is not 16 lower-case hex digits";
  else if (p.fingerprint_text.size() > kMaxFingerprintBytes)
    p.problem = "size: fingerprint text longer than " + std::to_string(kMaxFingerprintBytes) + " bytes";
  else if (p.label.size() > cache::kMaxLabelBytes)
    p.problem = "size: label longer than " + std::to_string(cache::kMaxLabelBytes) + " bytes";
  else if (cache::hash64(p.fingerprint_text) != *fp_hash)
    p.problem = "fingerprint: the hash does not match the fingerprint text";
  else if (*p.kind == EntryKind::selection && selection_key(p.fingerprint_text) != *p.key)
    p.problem = "key: the key is not the one of the selection's key text";
  else if (*p.kind == EntryKind::vk_pipeline_cache &&
           !(p.key->hi == cache::hash64("vk-pipeline-cache") && p.key->lo == *fp_hash))
    p.problem = "key: a pipeline-cache key must be derived from its fingerprint";
  p.fingerprint_hash = fp_hash.value_or(0);
  p.xxh3 = sum.value_or(0);
  return p;
}

/// The whole of import_bundle, which converts what may still escape from here.
CacheBundleReport import_checked(const std::filesystem::path& file, const std::filesystem::path& cache_dir,
                                 const LocalFingerprints& local_fingerprints, const CacheBundleLimits& limits) {
  // Pass 1: the structure. Nothing is written until all of it holds.
  int error = 0;
  const platform::File in = platform::open_file_for_reading(file, error);
  if (!in)
    fail(ErrorCategory::io, "cannot open cache bundle " + file.string() + ": " + platform::error_text(error) + ".",
         "check the path and that the file is readable");
  platform::FileStatus st;
  if (in.status(st) != 0 || !st.regular()) bad_bundle(file, "it is not a regular file");
  const std::uint64_t file_bytes = st.size;
  if (file_bytes > limits.max_file_bytes)
    bad_bundle(file, "it has " + std::to_string(file_bytes) + " bytes, more than the limit of " +
                         std::to_string(limits.max_file_bytes));
  std::uint8_t header[kHeaderBytes] = {};
  const std::size_t head = static_cast<std::size_t>(std::min<std::uint64_t>(file_bytes, kHeaderBytes));
  if (!read_exact(in, header, head, 0)) bad_bundle(file, "it cannot be read");
  if (std::memcmp(header, kMagic.data(), std::min(head, kMagic.size())) != 0)
    bad_bundle(file, "it does not start with the bundle magic VGPUBNDL (not a vgpu cache bundle)");
  if (head < kHeaderBytes)
    bad_bundle(file, "it is truncated (" + std::to_string(file_bytes) + " bytes, no whole header)");
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
  if (!read_exact(in, text.data(), text.size(), kHeaderBytes)) bad_bundle(file, "it is truncated inside the manifest");
  if (cache::hash64(text) != get_le(header + 24, 8)) bad_bundle(file, "its manifest checksum does not match");
  const json manifest = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (manifest.is_discarded()) bad_bundle(file, "its manifest is not JSON");
  if (!manifest.is_object()) bad_bundle(file, "its manifest is " + type_text(manifest) + ", not a JSON object");
  const Fields top(manifest, file, "its manifest");
  if (top.string("format") != "vgpu-cache-bundle")
    bad_bundle(file, "its manifest's \"format\" is not \"vgpu-cache-bundle\" (not a vgpu cache bundle manifest)");
  if (top.number("bundle_version") != version)
    bad_bundle(file, "its manifest's \"bundle_version\" is not the header's version " + std::to_string(version));
  const bool same_cache_format = top.number("cache_format") == kCacheFormatVersion;
  top.string("vgpu_version");  // informational, but typed like the rest
  const json& entries = top.array("entries");
  if (entries.size() > limits.max_entries)
    bad_bundle(file, "its manifest lists " + std::to_string(entries.size()) + " entries, more than the limit of " +
                         std::to_string(limits.max_entries));

  std::vector<Planned> plan;
  plan.reserve(entries.size());
  std::uint64_t offset = kHeaderBytes + manifest_bytes;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    Planned p = plan_entry(entries[i], i, same_cache_format, file);
    if (p.size > limits.max_entry_bytes)
      bad_bundle(file, "manifest entry " + std::to_string(i) + " declares " + std::to_string(p.size) +
                           " payload bytes, more than the limit of " + std::to_string(limits.max_entry_bytes));
    if (p.size > file_bytes - offset)
      bad_bundle(file, "it is truncated: manifest entry " + std::to_string(i) + " runs past the end of the file");
    p.offset = offset;
    offset += p.size;
    plan.push_back(std::move(p));
  }
  if (offset != file_bytes)
    bad_bundle(file,
               "it has " + std::to_string(file_bytes - offset) + " bytes after the last payload the manifest lists");

  const std::set<std::uint64_t> local = local_fingerprints();

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
      if (!read_exact(in, payload.data(), payload.size(), p.offset))
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
          fail(ErrorCategory::io,
               "kernel cache directory " + cache_dir.string() + " is not usable (see the warning above).",
               "set VGPU_CACHE_DIR to a writable directory");
      }
      const DeviceFingerprint fp{p.fingerprint_text, p.fingerprint_hash};
      const auto existing = store->load(*p.kind, *p.key, fp);
      if (existing && *existing == payload) {
        r.status = "present";
        ++report.present;
      } else if (existing) {
        p.problem = "conflict: the cache already holds a different payload for this key (kept)";
      } else if (store->store(*p.kind, *p.key, fp, payload, p.cost_us, p.label)) {
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

}  // namespace

CacheBundleReport import_bundle(const std::filesystem::path& file, const std::filesystem::path& cache_dir,
                                const LocalFingerprints& local, const CacheBundleLimits& limits) {
  // The typed reads above leave nlohmann nothing to throw; should a future edit slip, the
  // caller still gets vgpu's one error type, never a third-party exception.
  try {
    return import_checked(file, cache_dir, local, limits);
  } catch (const Error&) {
    throw;
  } catch (const json::exception& e) {
    bad_bundle(file, std::string("its manifest could not be read (") + e.what() + ")");
  } catch (const std::bad_alloc&) {
    fail(ErrorCategory::out_of_memory,
         "importing cache bundle " + file.string() + " ran out of memory; nothing more was imported.",
         "free memory, or lower CacheBundleLimits (max_manifest_bytes, max_entry_bytes) for this import");
  }
}

}  // namespace vgpu::detail::bundle
