// SPDX-License-Identifier: Apache-2.0
// tests/fuzz/bundle_fuzz.cpp — vgpu-fuzz-bundle: arbitrary bytes as a cache bundle, through the
// bundle reader behind import_cache_bundle (core/runtime/kernel_cache/cache_bundle_import.cpp): both passes,
// into a private cache directory. docs/fuzzing.md.
//
// Input: one flag byte, then
//   bit 0 set: the whole bundle file, as is (the header checks: magic, version, sizes, checksum);
//   bit 0 clear: the manifest's text, optionally a NUL and the payload bytes; the harness puts
//          a header with the right size and checksum in front (the fuzzer cannot invert
//          xxHash), so every input reaches the JSON reader. Bits 2-3 pick the header's version
//          (0: this one, 1: 0, 2: a newer one, 3: this one). Bit 1 also makes the entries
//          consistent where the harness can: each fingerprint hash from its text, a selection's
//          or pipeline cache's key from what it derives from, each xxh3 from its payload, so
//          the payload checks and the store's writes are reached.
// Checked: only vgpu::Error leaves the reader, and it has a Fix hint; a report accounts for
// every entry (imported, present or rejected, a rejection with a Fix); nothing but entry files
// in v<format>/<kind>/ folders is ever written.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "cache_bundle_format.hpp"
#include "vgpu/cache/kernel_key.hpp"
#include "vgpu/error.hpp"
#include "vgpu/version.hpp"

namespace {

namespace fs = std::filesystem;
using vgpu::cache::hash64;
using vgpu::cache::KernelKey;

/// A private directory for this process (the bundle file and the cache), removed at exit.
struct Scratch {
  fs::path root, bundle, cache;
  Scratch() {
    std::string pattern = (fs::temp_directory_path() / "vgpu-fuzz-bundle-XXXXXX").string();
    if (!::mkdtemp(pattern.data())) std::abort();
    root = pattern;
    bundle = root / "in.vgb";
    cache = root / "cache";
    std::atexit([] {
      std::error_code ec;
      fs::remove_all(instance().root, ec);
    });
  }
  static Scratch& instance() {
    static Scratch s;
    return s;
  }
};

/// Makes each entry of the manifest consistent with itself and the payloads (flag bit 1).
void make_consistent(nlohmann::json& manifest, std::string_view payloads) {
  if (!manifest.is_object()) return;
  const auto entries = manifest.find("entries");
  if (entries == manifest.end() || !entries->is_array()) return;
  std::uint64_t offset = 0;
  for (auto& e : *entries) {
    if (!e.is_object()) continue;
    const auto text = e.find("fingerprint_text");
    const auto kind = e.find("kind");
    if (text != e.end() && text->is_string()) {
      const std::string& t = text->get_ref<const std::string&>();
      const std::uint64_t h = hash64(t);
      e["fingerprint"] = vgpu::detail::bundle::hex16(h);
      if (kind != e.end() && *kind == "select")
        e["key"] = KernelKey{hash64("vgpu.selection.hi|" + t), hash64("vgpu.selection.lo|" + t)}.hex();
      else if (kind != e.end() && *kind == "vkpc")
        e["key"] = KernelKey{hash64("vk-pipeline-cache"), h}.hex();
    }
    const auto size = e.find("size");
    if (size != e.end() && size->is_number_unsigned()) {
      const std::uint64_t n = size->get<std::uint64_t>();
      if (n <= payloads.size() - offset) {
        e["xxh3"] = vgpu::detail::bundle::hex16(hash64(payloads.substr(offset, n)));
        offset += n;
      }
    }
  }
}

/// The bundle file the input describes.
std::string bundle_of(const std::uint8_t* data, std::size_t size) {
  const std::uint8_t flags = data[0];
  const std::string_view rest(reinterpret_cast<const char*>(data + 1), size - 1);
  if (flags & 1) return std::string(rest);
  const auto nul = rest.find('\0');
  std::string manifest(rest.substr(0, nul));
  const std::string_view payloads = nul == std::string_view::npos ? std::string_view{} : rest.substr(nul + 1);
  if (flags & 2) {
    nlohmann::json j = nlohmann::json::parse(manifest, nullptr, /*allow_exceptions=*/false);
    if (!j.is_discarded()) {
      make_consistent(j, payloads);
      manifest = j.dump();
    }
  }
  const int pick = (flags >> 2) & 3;
  const std::uint32_t version = pick == 1 ? 0 : pick == 2 ? vgpu::kCacheBundleVersion + 1 : vgpu::kCacheBundleVersion;
  std::vector<std::uint8_t> header(vgpu::detail::bundle::kMagic.begin(), vgpu::detail::bundle::kMagic.end());
  vgpu::detail::bundle::put_le(header, version, 4);
  vgpu::detail::bundle::put_le(header, 0, 4);
  vgpu::detail::bundle::put_le(header, manifest.size(), 8);
  vgpu::detail::bundle::put_le(header, hash64(manifest), 8);
  std::string file(header.begin(), header.end());
  return file + manifest + std::string(payloads);
}

/// Aborts unless everything under the cache directory is a v<format>/<kind>/ folder or an entry
/// file in one.
void check_written(const fs::path& cache) {
  std::error_code ec;
  if (!fs::exists(cache, ec)) return;
  const std::string format = "v" + std::to_string(vgpu::kCacheFormatVersion);
  for (auto it = fs::recursive_directory_iterator(cache, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    const fs::path rel = fs::relative(it->path(), cache);
    const auto depth = std::distance(rel.begin(), rel.end());
    const bool folder = it->is_directory() && !it->is_symlink();
    if (depth == 1 && folder && rel.string() == format) continue;
    if (depth == 2 && folder && vgpu::detail::bundle::parse_kind(rel.filename().string())) continue;
    const std::string name = rel.filename().string();
    const bool entry = name.size() == 36 && name.ends_with(".vgc") && KernelKey::from_hex(name.substr(0, 32));
    if (depth == 3 && it->is_regular_file() && !it->is_symlink() && entry) continue;
    std::abort();  // something the import must never write
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  Scratch& s = Scratch::instance();
  {
    const std::string file = bundle_of(data, size);
    std::ofstream out(s.bundle, std::ios::binary | std::ios::trunc);
    out.write(file.data(), static_cast<std::streamsize>(file.size()));
    if (!out) std::abort();
  }
  const auto local = [] { return std::set<std::uint64_t>{hash64("backend=fuzz;device=0;")}; };
  try {
    const vgpu::CacheBundleReport r = vgpu::detail::bundle::import_bundle(s.bundle, s.cache, local, {});
    if (r.imported + r.present + r.rejected != r.entries.size()) std::abort();
    for (const auto& e : r.entries) {
      if (e.status != "imported" && e.status != "present" && e.status != "rejected") std::abort();
      if ((e.status == "rejected") != (e.reason.find("Fix:") != std::string::npos)) std::abort();
    }
  } catch (const vgpu::Error& e) {
    if (std::string(e.what()).find("Fix:") == std::string::npos) std::abort();  // every refusal says what to do
  }
  check_written(s.cache);
  std::error_code ec;
  fs::remove_all(s.cache, ec);  // each input starts from an empty cache
  return 0;
}
