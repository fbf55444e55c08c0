// SPDX-License-Identifier: Apache-2.0
// cache/src/disk_store.cpp — the L2 store: options from the environment, the directory check,
// load and store (temp file + atomic rename), reject, counters. Directory walks, eviction and
// maintenance are in disk_store_directory.cpp; the entry format in disk_store_format.cpp.
#include "vgpu/cache/disk_store.hpp"

#include <algorithm>
#include <cerrno>
#include <mutex>
#include <set>
#include <system_error>

#include "disk_store_impl.hpp"
#include "vgpu/config.hpp"
#include "vgpu/log.hpp"
#include "vgpu/version.hpp"

namespace vgpu::cache {
namespace fs = std::filesystem;
using detail::error_text;
using detail::Problem;

namespace {

constexpr const char* kDefaultFix =
    "set VGPU_CACHE_DIR to a writable directory, or VGPU_CACHE_DISABLE=1 to turn the disk cache off";

/// Logs that dir is unusable, once per directory per process.
void warn_unusable(const fs::path& dir, const std::string& why, const std::string& fix) {
  static std::mutex mutex;
  static std::set<std::string>& warned = *new std::set<std::string>();  // leaked: background writes warn too
  {
    std::lock_guard lock(mutex);
    if (!warned.insert(dir.string()).second) return;
  }
  log(LogLevel::warn, "kernel cache directory '" + dir.string() + "' is not usable (" + why +
                          "); compiled kernels are kept in memory only. Fix: " + fix + ".");
}

}  // namespace

DiskStoreOptions DiskStoreOptions::from(const Config& c) {
  DiskStoreOptions o;
  o.directory = c.cache_dir;
  o.enabled = c.cache_enabled;
  o.max_bytes = c.cache_max_bytes;
  return o;
}

DiskStoreOptions DiskStoreOptions::from_env() { return from(Config::from_env()); }  // validates, warns

detail::OpenedDir DiskStore::Impl::open_root(bool create) const {
  detail::OpenedDir base = detail::open_base_dir(options.directory, create);
  if (base.state != detail::DirState::ok) return base;
  return detail::open_sub_dir(base, root_name, create);
}

detail::OpenedDir DiskStore::Impl::open_kind(const detail::OpenedDir& root_dir, EntryKind kind, bool create) const {
  return detail::open_sub_dir(root_dir, std::string(to_string(kind)), create);
}

detail::OpenedDir DiskStore::Impl::open_kind_path(EntryKind kind, bool create) const {
  detail::OpenedDir r = open_root(create);
  if (r.state != detail::DirState::ok) return r;
  return open_kind(r, kind, create);
}

void DiskStore::Impl::warn_folder(const detail::OpenedDir& folder, EntryKind kind) const {
  const std::string what =
      folder.path == kind_dir(kind) ? std::string(to_string(kind)) + " entries are not" : "no compiled kernel is";
  detail::warn_once("folder:" + folder.path.string(), "kernel cache folder '" + folder.path.string() +
                                                          "' is not usable (" + folder.problem + "); " + what +
                                                          " cached on disk. Fix: " + folder.fix + ".");
}

bool DiskStore::Impl::check_writable(std::string& why, std::string& fix) const {
  // A few attempts: a concurrent rm -rf of the cache may remove what was just made, and that
  // must not switch L2 off for this process.
  for (int attempt = 0; attempt < 3; ++attempt) {
    const detail::OpenedDir r = open_root(true);
    if (r.state == detail::DirState::absent) {
      why = "'" + r.path.string() + "' vanished while being made";
      fix = kDefaultFix;
      continue;
    }
    if (r.state == detail::DirState::unusable) {
      why = "'" + r.path.string() + (r.problem.starts_with("cannot") ? "': " : "' is ") + r.problem;
      fix = r.fix.empty() ? kDefaultFix : r.fix;
      return false;
    }
    std::string name;
    int e = 0;
    platform::File probe = detail::make_temp_at(r.dir, std::string(detail::kTempPrefix) + "probe-", name, e);
    if (!probe) {
      why = "cannot create a file in " + root.string() + ": " + error_text(e);
      fix = kDefaultFix;
      if (e == ENOENT) continue;
      return false;
    }
    probe.close();
    r.dir.remove(name);
    return true;
  }
  return false;
}

void DiskStore::Impl::account_locked(const std::string& path, std::uint64_t bytes) {
  auto [it, inserted] = bytes_of.try_emplace(path, bytes);
  if (!inserted) {
    total_bytes -= std::min(total_bytes, it->second);
    it->second = bytes;
  }
  total_bytes += bytes;
}

void DiskStore::Impl::forget_locked(const std::string& path) {
  if (auto it = bytes_of.find(path); it != bytes_of.end()) {
    total_bytes -= std::min(total_bytes, it->second);
    bytes_of.erase(it);
  }
}

bool DiskStore::Impl::write_failed(const std::string& what, bool warned) {
  bool first;
  {
    std::lock_guard lock(mutex);
    ++stats.write_failures;
    first = !warned_write_failure && !warned;
    if (!warned) warned_write_failure = true;
  }
  log(first ? LogLevel::warn : LogLevel::debug,
      "could not write a kernel cache entry: " + what +
          (first ? ". Fix: free space in, or fix the permissions of, " + root.string() +
                       " (or set VGPU_CACHE_DIR to another directory)."
                 : ""));
  return false;
}

void DiskStore::Impl::drop(const platform::Directory& kind_dir, const std::string& name, const fs::path& path,
                           const platform::FileStatus& opened, const Problem& why) {
  platform::FileStatus now;
  const bool removed =
      kind_dir.status_of(name, now) == 0 && platform::same_file(now, opened) && kind_dir.remove(name) == 0;
  log(LogLevel::info, "dropped kernel cache entry " + path.string() + " (" + why.text() + ")");
  std::lock_guard lock(mutex);
  ++stats.rejected[why.reason];
  ++stats.misses;
  if (removed) forget_locked(path.string());
}

namespace {

/// Warns (once per path) that a non-regular file sits where an entry belongs.
void warn_not_entry(const fs::path& path, const Problem& why) {
  const bool folder = why.details.starts_with("a directory");
  detail::warn_once("entry:" + path.string(),
                    "kernel cache entry '" + path.string() + "' is " + why.details +
                        "; vgpu never opens, replaces or deletes such a thing, so this kernel is built again each "
                        "time. Fix: remove it (rm " +
                        (folder ? "-r '" : "'") + path.string() + "').");
}

}  // namespace

DiskStore& DiskStore::global() {
  // Leaked on purpose: usable from other static destructors and threads still running at exit.
  static DiskStore* store = new DiskStore(DiskStoreOptions::from_env());
  return *store;
}

DiskStore::DiskStore(DiskStoreOptions options) : impl_(std::make_unique<Impl>()) {
  Impl& s = *impl_;
  s.options = std::move(options);
  s.root_name = "v" + std::to_string(kCacheFormatVersion);
  s.root = s.options.directory / s.root_name;
  if (!s.options.enabled) return;
  if (s.options.directory.empty()) {
    warn_unusable("", "no directory: VGPU_CACHE_DIR, XDG_CACHE_HOME and HOME are all unset", kDefaultFix);
    return;
  }
  std::string why, fix;
  s.usable = s.check_writable(why, fix);
  if (!s.usable) warn_unusable(s.options.directory, why, fix);
}

DiskStore::~DiskStore() = default;

bool DiskStore::enabled() const noexcept { return impl_->usable; }

const std::filesystem::path& DiskStore::directory() const noexcept { return impl_->options.directory; }

const DiskStoreOptions& DiskStore::options() const noexcept { return impl_->options; }

std::optional<std::vector<std::uint8_t>> DiskStore::load(EntryKind kind, const KernelKey& key,
                                                         const DeviceFingerprint& fp, LoadOutcome* outcome) {
  LoadOutcome ignored;
  LoadOutcome& result = outcome ? *outcome : ignored;
  result = LoadOutcome::disabled;
  Impl& s = *impl_;
  if (!s.usable) return std::nullopt;
  const detail::OpenedDir dir = s.open_kind_path(kind, false);
  if (dir.state != detail::DirState::ok) {
    if (dir.state == detail::DirState::unusable)
      s.warn_folder(dir, kind);  // L2 is off for this kind until the folder is fixed
    else
      result = LoadOutcome::missing;
    std::lock_guard lock(s.mutex);
    ++s.stats.misses;
    return std::nullopt;
  }
  result = LoadOutcome::missing;
  const std::string name = Impl::entry_name(key);
  const fs::path path = s.entry_path(kind, key);
  platform::FileStatus st;
  Problem why;
  platform::File f = detail::open_regular_at(dir.dir, name, st, why);
  if (!f) {
    const bool not_a_file = why.reason == "type";  // left alone, never deleted
    if (not_a_file) warn_not_entry(path, why);
    std::lock_guard lock(s.mutex);
    ++s.stats.misses;
    if (not_a_file) {
      ++s.stats.rejected[why.reason];
      result = LoadOutcome::rejected;
    }
    return std::nullopt;
  }
  std::vector<std::uint8_t> payload;
  detail::check_entry(f, st.size, kind, key, &fp.text, &payload, why);
  if (why) {
    s.drop(dir.dir, name, path, st, why);
    result = LoadOutcome::rejected;
    return std::nullopt;
  }
  result = LoadOutcome::hit;
  f.touch();  // a hit makes the entry the most recently used
  std::lock_guard lock(s.mutex);
  ++s.stats.hits;
  return payload;
}

bool DiskStore::store(EntryKind kind, const KernelKey& key, const DeviceFingerprint& fp,
                      std::span<const std::uint8_t> payload, std::uint64_t cost_us, std::string_view label) {
  Impl& s = *impl_;
  if (!s.usable) return false;
  if (fp.text.size() > detail::kMaxFingerprintBytes) {
    log(LogLevel::debug, "not caching an entry: its device fingerprint text exceeds 64 KiB");
    return false;
  }
  const std::vector<std::uint8_t> header =
      detail::encode_header(kind, key, fp.text, detail::label_prefix(label), payload, cost_us);
  const std::uint64_t file_bytes = header.size() + payload.size();
  if (file_bytes > s.options.max_bytes) {
    log(LogLevel::debug,
        "not caching a " + std::to_string(file_bytes) + "-byte entry: larger than VGPU_CACHE_MAX_BYTES");
    return false;
  }
  s.ensure_scanned();
  const std::string name = Impl::entry_name(key);
  const fs::path path = s.entry_path(kind, key);
  const std::string prefix = std::string(detail::kTempPrefix) + key.hex() + "-";
  // A full disk (or quota) gets one eviction to make room and one more try (docs/cache-format.md,
  // "A full disk"); retry says whether to try again after the errno e.
  bool made_room = false;
  const auto retry_when_full = [&](int e) { return s.retry_after_full(e, file_bytes, made_room); };
  const auto full_note = [&](int e) {
    return made_room && platform::is_disk_full(e) ? std::string(" (also after evicting older entries to make room)")
                                                  : std::string();
  };
  // More attempts when the folders vanished under us (a concurrent rm -rf of the cache):
  // they are made again, with the same no-symlink rule.
  for (int attempt = 0;; ++attempt) {
    const bool last = attempt == 2;
    const detail::OpenedDir dir = s.open_kind_path(kind, true);
    if (dir.state == detail::DirState::unusable) {
      s.warn_folder(dir, kind);
      return s.write_failed("'" + dir.path.string() + "' is not usable (" + dir.problem + ")", true);
    }
    if (dir.state == detail::DirState::absent) {
      if (!last) continue;
      return s.write_failed("cannot create " + s.kind_dir(kind).string() + ": it vanished while being made");
    }
    std::string temp;
    int e = 0;
    platform::File out = detail::make_temp_at(dir.dir, prefix, temp, e);
    if (!out) {
      if (e == ENOENT && !last) continue;
      if (retry_when_full(e)) continue;
      return s.write_failed("cannot create a temp file in " + s.kind_dir(kind).string() + ": " + error_text(e) +
                            full_note(e));
    }
    int err = detail::write_fault(s.kind_dir(kind), file_bytes);  // 0 unless a test simulates a failure
    if (err == 0) err = out.write_all(header.data(), header.size());
    if (err == 0) err = out.write_all(payload.data(), payload.size());
    out.share_read();
    if (const int close_err = out.close(); err == 0) err = close_err;
    bool ok = err == 0;
    platform::FileStatus there;
    if (ok && dir.dir.status_of(name, there) == 0 && !there.regular()) {
      // Something that is not an entry file holds the name: never replaced (rename would).
      dir.dir.remove(temp);
      const Problem why = detail::type_problem(there.type);
      warn_not_entry(path, why);
      return s.write_failed(path.string() + " is " + why.details, true);
    }
    if (ok && (err = dir.dir.rename(temp, name)) != 0) ok = false;
    if (!ok) {
      dir.dir.remove(temp);
      if (err == ENOENT && !last) continue;
      if (retry_when_full(err)) continue;
      return s.write_failed("writing " + path.string() + ": " + error_text(err) + full_note(err));
    }
    break;
  }
  bool over;
  {
    std::lock_guard lock(s.mutex);
    ++s.stats.writes;
    s.account_locked(path.string(), file_bytes);
    over = s.total_bytes > s.options.max_bytes;
  }
  if (over) s.evict();
  return true;
}

void DiskStore::reject(EntryKind kind, const KernelKey& key, std::string_view reason) {
  Impl& s = *impl_;
  if (!s.usable) return;
  const std::string name = Impl::entry_name(key);
  const fs::path path = s.entry_path(kind, key);
  const detail::OpenedDir dir = s.open_kind_path(kind, false);
  platform::FileStatus st;
  const bool removed = dir.state == detail::DirState::ok && dir.dir.status_of(name, st) == 0 && st.regular() &&
                       dir.dir.remove(name) == 0;
  log(LogLevel::info, "dropped kernel cache entry " + path.string() + " (" + std::string(reason) + ")");
  std::lock_guard lock(s.mutex);
  ++s.stats.rejected[std::string(reason)];
  if (removed) s.forget_locked(path.string());
}

DiskStoreStats DiskStore::stats() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->stats;
}

}  // namespace vgpu::cache
