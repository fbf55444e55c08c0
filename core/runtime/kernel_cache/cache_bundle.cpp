// SPDX-License-Identifier: Apache-2.0
// core/runtime/kernel_cache/cache_bundle.cpp — export_cache_bundle / import_cache_bundle (vgpu/cache_bundle.hpp):
// the writer, and the public entry points, which let only vgpu::Error out. The reader is
// cache_bundle_import.cpp. Layout: docs/cache-format.md, "Cache bundles".
//
// Export to a path writes a new file next to it and renames it over the path, so a reader never
// sees half a bundle. Rename replaces whatever has the name, so the path is refused unless it
// is absent or a regular file (checked before the work and again before the rename): a FIFO, a
// device node, a directory or a symlink given as FILE is never replaced by a file. A replaced
// file keeps its permission bits (and, where allowed, its owner); a new one gets 0666 less the
// umask, as any file the user creates.

#include <cerrno>
#include <cstring>
#include <limits>
#include <new>
#include <nlohmann/json.hpp>
#include <ostream>
#include <random>
#include <set>

#include "cache_bundle_format.hpp"
#include "vgpu/error.hpp"
#include "vgpu/runtime.hpp"
#include "vgpu/version.hpp"
#include "vgpu/platform/files.hpp"

namespace vgpu {
namespace {

using namespace detail::bundle;

/// A bundle ready to be written: its header, manifest text and payloads, and the report.
struct Built {
  CacheBundleReport report;
  std::vector<std::uint8_t> header;
  std::string manifest;
  std::vector<std::vector<std::uint8_t>> payloads;
};

/// Says whether text is valid UTF-8 (a manifest is JSON, which holds only UTF-8 strings).
bool is_utf8(const std::string& text) {
  try {
    (void)nlohmann::json(text).dump();
    return true;
  } catch (const nlohmann::json::exception&) {
    return false;
  }
}

/// Reads every valid entry of cache_dir into a bundle in memory.
Built build_bundle(const std::filesystem::path& cache_dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(cache_dir, ec))
    fail(ErrorCategory::io,
         "kernel cache directory " + cache_dir.string() + " does not exist, so there is nothing to export.",
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
         "kernel cache directory " + cache_dir.string() +
             " cannot be exported: vgpu does not use it (it is not "
             "writable or not a plain directory; the warning above says which), so its entries cannot be read safely.",
         "export as a user who can write the directory, or copy it (cp -a) to a writable place and export the copy");

  Built b;
  b.report.directory = cache_dir;
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
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
    if (e.valid && key)
      payload = store.load(e.kind, *key, DeviceFingerprint{e.fingerprint_text, cache::hash64(e.fingerprint_text)});
    std::string skipped;
    if (!payload)
      skipped = (e.valid ? "changed while it was read" : e.problem) +
                ". Fix: run `vgpu-probe cache verify --fix`, then export again";
    else if (!is_utf8(e.fingerprint_text))
      skipped =
          "its fingerprint text is not UTF-8, which the bundle's JSON manifest cannot hold. Fix: none needed "
          "beyond rebuilding it where it is used (the entry stays in this cache, and the other machine builds its own)";
    if (!skipped.empty()) {
      entry.status = "skipped";
      entry.reason = std::move(skipped);
      ++b.report.skipped;
      b.report.entries.push_back(std::move(entry));
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
                    {"cost_us", e.cost_us},
                    // A label that is not UTF-8 (a hand-made entry) cannot go into the JSON manifest;
                    // it only names the entry for people, so the entry goes without it.
                    {"label", is_utf8(e.label) ? e.label : std::string()}});
    ++b.report.exported;
    b.report.entries.push_back(std::move(entry));
    b.payloads.push_back(std::move(*payload));
  }
  b.report.fingerprints.assign(fingerprints.begin(), fingerprints.end());

  nlohmann::ordered_json manifest;
  manifest["format"] = "vgpu-cache-bundle";
  manifest["bundle_version"] = kCacheBundleVersion;
  manifest["cache_format"] = kCacheFormatVersion;
  manifest["vgpu_version"] =
      std::to_string(kVersionMajor) + "." + std::to_string(kVersionMinor) + "." + std::to_string(kVersionPatch);
  manifest["entries"] = std::move(list);
  b.manifest = manifest.dump();
  b.header.assign(kMagic.begin(), kMagic.end());
  put_le(b.header, kCacheBundleVersion, 4);
  put_le(b.header, 0, 4);  // flags, none yet
  put_le(b.header, b.manifest.size(), 8);
  put_le(b.header, cache::hash64(b.manifest), 8);
  return b;
}

/// Returns the status of the export target when it is a regular file, nothing when it does
/// not exist; refuses anything else (rename would replace it with a file).
std::optional<platform::FileStatus> target_state(const std::filesystem::path& file) {
  platform::FileStatus st;
  if (const int e = platform::status_no_follow(file, st); e != 0) {
    if (e == ENOENT) return std::nullopt;
    fail(ErrorCategory::io, "cannot export the cache bundle to " + file.string() + ": " + platform::error_text(e) + ".",
         "choose a FILE in a directory you can read and write");
  }
  if (st.regular()) return st;
  const bool link = st.type == platform::FileType::symlink;
  fail(ErrorCategory::invalid_argument,
       "cannot export the cache bundle to " + file.string() + ": it is " +
           (link ? std::string("a symbolic link") : platform::file_type_text(st.type)) +
           ", not a regular file, and an export would replace it with one; nothing was written.",
       link ? "give the file the link points to (readlink -f), or a new file name"
            : "give a new file name or an existing regular file; to send the bundle to a pipe or "
              "device, write it to standard output (`vgpu-probe cache export - > TARGET`, or "
              "export_cache_bundle with a std::ostream)");
}

/// A new file beside the target, removed again unless commit() renamed it into place.
class TempFile {
 public:
  explicit TempFile(const std::filesystem::path& target) : target_(target) {
    // Exclusive with a random name (as mkstemp, but mode 0666: the OS applies the umask).
    std::random_device rd;
    int error = EEXIST;
    for (int attempt = 0; attempt < 100 && !file_ && error == EEXIST; ++attempt) {
      char suffix[16];
      std::snprintf(suffix, sizeof suffix, ".tmp-%08x", static_cast<unsigned>(rd()));
      path_ = target.string() + suffix;
      file_ = platform::create_new_file(path_, error);
    }
    if (!file_) failed("create a file beside", error);
  }
  ~TempFile() {
    file_.close();
    if (!committed_) platform::remove_file(path_);
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;

  /// Writes all n bytes, or throws (the file is removed).
  void write(const void* buffer, std::size_t n) {
    if (const int e = file_.write_all(buffer, n); e != 0) failed("write", e);
  }
  /// Gives the file the permissions (and, where allowed, the owner) of the file it replaces.
  void keep_attributes(const platform::FileStatus& old) {
    if (const int e = file_.take_attributes_of(old); e != 0) failed("keep the permissions of", e);
  }
  /// Flushes and closes the file, then renames it over the target.
  void commit() {
    if (const int e = file_.sync(); e != 0) failed("write", e);
    if (const int e = file_.close(); e != 0) failed("write", e);
    target_state(target_);  // something other than a file appeared meanwhile: refused, never replaced
    if (const int e = platform::rename_replacing(path_, target_); e != 0) failed("rename the new file onto", e);
    committed_ = true;
  }

 private:
  [[noreturn]] void failed(const char* what, int error) const {
    fail(ErrorCategory::io,
         std::string("cannot ") + what + " cache bundle " + target_.string() + ": " + platform::error_text(error) +
             "; nothing was written.",
         "choose a FILE in a writable directory with enough free space");
  }
  std::filesystem::path target_;
  std::string path_;
  platform::File file_;
  bool committed_ = false;
};

/// Converts what may still escape a bundle operation into vgpu's one error type.
template <class Work>
auto guarded(const std::string& what, Work&& work) -> decltype(work()) {
  try {
    return work();
  } catch (const Error&) {
    throw;
  } catch (const std::bad_alloc&) {
    fail(ErrorCategory::out_of_memory, what + " ran out of memory.", "free memory and try again");
  } catch (const std::exception& e) {
    fail(ErrorCategory::internal, what + " failed unexpectedly: " + e.what() + ".",
         "please report it as a vgpu bug, with this message");
  }
}

}  // namespace

CacheBundleReport export_cache_bundle(const std::filesystem::path& cache_dir, const std::filesystem::path& file) {
  return guarded("exporting the cache bundle " + file.string(), [&] {
    const std::optional<platform::FileStatus> old = target_state(file);  // refused before any work
    Built b = build_bundle(cache_dir);
    TempFile out(file);
    if (old) out.keep_attributes(*old);
    out.write(b.header.data(), b.header.size());
    out.write(b.manifest.data(), b.manifest.size());
    for (const auto& p : b.payloads) out.write(p.data(), p.size());
    out.commit();
    b.report.bundle = file;
    return std::move(b.report);
  });
}

CacheBundleReport export_cache_bundle(const std::filesystem::path& cache_dir, std::ostream& out) {
  return guarded("exporting the cache bundle to a stream", [&] {
    Built b = build_bundle(cache_dir);
    errno = 0;
    out.write(reinterpret_cast<const char*>(b.header.data()), static_cast<std::streamsize>(b.header.size()));
    out.write(b.manifest.data(), static_cast<std::streamsize>(b.manifest.size()));
    for (const auto& p : b.payloads)
      out.write(reinterpret_cast<const char*>(p.data()), static_cast<std::streamsize>(p.size()));
    out.flush();
    if (!out) {
      const int e = errno;
      fail(ErrorCategory::io,
           std::string("cannot write the cache bundle to its output stream") +
               (e ? std::string(": ") + std::strerror(e) : "") + "; what was written is not a whole bundle.",
           "write it to a FILE instead, or to a pipe or disk with room for it");
    }
    b.report.bundle = "-";
    return std::move(b.report);
  });
}

CacheBundleReport import_cache_bundle(const std::filesystem::path& file, const std::filesystem::path& cache_dir,
                                      const std::optional<std::vector<DeviceFingerprint>>& local_fingerprints,
                                      const CacheBundleLimits& limits) {
  return guarded("importing the cache bundle " + file.string(), [&] {
    const auto local = [&] {
      std::set<std::uint64_t> hashes;
      if (local_fingerprints) {
        for (const auto& fp : *local_fingerprints) hashes.insert(fp.hash);
      } else {
        for (const auto& info : Runtime::global().devices()) hashes.insert(info.fingerprint.hash);
      }
      return hashes;
    };
    return detail::bundle::import_bundle(file, cache_dir, local, limits);
  });
}

}  // namespace vgpu
