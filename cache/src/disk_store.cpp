// cache/src/disk_store.cpp — the L2 store: options from the environment, the directory check,
// load and store (temp file + atomic rename), reject, counters. Directory walks, eviction and
// maintenance are in disk_store_directory.cpp; the entry format in disk_store_format.cpp.
#include "vgpu/cache/disk_store.hpp"

#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <mutex>
#include <set>
#include <system_error>

#include "disk_store_impl.hpp"
#include "payload_check.hpp"
#include "vgpu/log.hpp"
#include "vgpu/version.hpp"

namespace vgpu::cache {
namespace fs = std::filesystem;
using detail::EntryHeader;
using detail::errno_text;
using detail::Fd;
using detail::Problem;

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool env_true(const char* v) {
  if (!v) return false;
  const std::string s = lower(v);
  return s == "1" || s == "true" || s == "yes" || s == "on";
}

/// Parses "<digits>[K|M|G|T][iB]" (case-insensitive, binary units); nothing for 0 or junk.
std::optional<std::uint64_t> parse_bytes(std::string_view text) {
  std::size_t i = 0;
  std::uint64_t value = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
    const std::uint64_t d = static_cast<std::uint64_t>(text[i] - '0');
    if (value > (UINT64_MAX - d) / 10) return std::nullopt;
    value = value * 10 + d;
    ++i;
  }
  if (i == 0) return std::nullopt;
  const std::string suffix = lower(text.substr(i));
  int shift = 0;
  if (!suffix.empty()) {
    const std::string_view units = "kmgt";
    const auto u = units.find(suffix[0]);
    if (u == std::string_view::npos || !(suffix.size() == 1 || suffix.substr(1) == "ib")) return std::nullopt;
    shift = 10 * static_cast<int>(u + 1);
  }
  if (shift && value > (UINT64_MAX >> shift)) return std::nullopt;
  value <<= shift;
  if (value == 0) return std::nullopt;
  return value;
}

fs::path default_directory() {
  if (const char* v = std::getenv("VGPU_CACHE_DIR"); v && *v) return v;
  if (const char* v = std::getenv("XDG_CACHE_HOME"); v && *v == '/') return fs::path(v) / "vgpu";
  if (const char* v = std::getenv("HOME"); v && *v) return fs::path(v) / ".cache" / "vgpu";
  passwd pw{};
  passwd* found = nullptr;
  char buf[4096];
  if (::getpwuid_r(::getuid(), &pw, buf, sizeof buf, &found) == 0 && found && found->pw_dir && *found->pw_dir)
    return fs::path(found->pw_dir) / ".cache" / "vgpu";
  return {};
}

/// Logs that dir is unusable, once per directory per process.
void warn_unusable(const fs::path& dir, const std::string& why) {
  static std::mutex mutex;
  static std::set<std::string> warned;
  {
    std::lock_guard lock(mutex);
    if (!warned.insert(dir.string()).second) return;
  }
  log(LogLevel::warn, "kernel cache directory '" + dir.string() + "' is not usable (" + why +
                          "); compiled kernels are kept in memory only. Fix: set VGPU_CACHE_DIR to a writable "
                          "directory, or VGPU_CACHE_DISABLE=1 to turn the disk cache off.");
}

}  // namespace

DiskStoreOptions DiskStoreOptions::from_env() {
  DiskStoreOptions o;
  o.directory = default_directory();
  o.enabled = !env_true(std::getenv("VGPU_CACHE_DISABLE"));
  if (const char* v = std::getenv("VGPU_CACHE_MAX_BYTES"); v && *v) {
    if (auto bytes = parse_bytes(v)) {
      o.max_bytes = *bytes;
    } else {
      static std::mutex mutex;  // warn once per bad value, however often the options are read
      static std::set<std::string> warned;
      std::unique_lock lock(mutex);
      if (warned.insert(v).second) {
        lock.unlock();
        log(LogLevel::warn, std::string("ignoring VGPU_CACHE_MAX_BYTES='") + v +
                                "' (expected a positive byte count such as 268435456 or 256M); using " +
                                std::to_string(o.max_bytes >> 20) + " MiB");
      }
    }
  }
  return o;
}

bool DiskStore::Impl::check_writable(std::string& why) const {
  std::error_code ec;
  fs::create_directories(root, ec);
  if (ec) {
    why = "cannot create " + root.string() + ": " + ec.message();
    return false;
  }
  std::string name = (root / ".tmp-probe-XXXXXX").string();
  const int fd = ::mkostemp(name.data(), O_CLOEXEC);
  if (fd < 0) {
    why = "cannot create a file in " + root.string() + ": " + errno_text(errno);
    return false;
  }
  ::close(fd);
  ::unlink(name.c_str());
  return true;
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

void DiskStore::Impl::ensure_kind_dir(EntryKind kind) {
  const std::uint32_t bit = 1u << static_cast<std::uint32_t>(kind);
  {
    std::lock_guard lock(mutex);
    if (kind_dirs_made & bit) return;
  }
  std::error_code ec;
  fs::create_directories(kind_dir(kind), ec);
  if (!ec) {
    std::lock_guard lock(mutex);
    kind_dirs_made |= bit;
  }
}

bool DiskStore::Impl::write_failed(const std::string& what) {
  bool first;
  {
    std::lock_guard lock(mutex);
    ++stats.write_failures;
    first = !warned_write_failure;
    warned_write_failure = true;
  }
  log(first ? LogLevel::warn : LogLevel::debug,
      "could not write a kernel cache entry: " + what +
          (first ? ". Fix: free space in, or fix the permissions of, " + root.string() +
                       " (or set VGPU_CACHE_DIR to another directory)."
                 : ""));
  return false;
}

void DiskStore::Impl::drop(const fs::path& path, const struct stat& opened, const Problem& why) {
  bool removed = false;
  struct stat now;
  if (S_ISREG(opened.st_mode) && ::lstat(path.c_str(), &now) == 0 && detail::same_file(now, opened))
    removed = ::unlink(path.c_str()) == 0;
  log(LogLevel::info, "dropped kernel cache entry " + path.string() + " (" + why.text() + ")");
  std::lock_guard lock(mutex);
  ++stats.rejected[why.reason];
  ++stats.misses;
  if (removed) forget_locked(path.string());
}

DiskStore& DiskStore::global() {
  // Leaked on purpose: usable from other static destructors and threads still running at exit.
  static DiskStore* store = new DiskStore(DiskStoreOptions::from_env());
  return *store;
}

DiskStore::DiskStore(DiskStoreOptions options) : impl_(std::make_unique<Impl>()) {
  Impl& s = *impl_;
  s.options = std::move(options);
  s.root = s.options.directory / ("v" + std::to_string(kCacheFormatVersion));
  if (!s.options.enabled) return;
  if (s.options.directory.empty()) {
    warn_unusable("", "no directory: VGPU_CACHE_DIR, XDG_CACHE_HOME and HOME are all unset");
    return;
  }
  std::string why;
  s.usable = s.check_writable(why);
  if (!s.usable) warn_unusable(s.options.directory, why);
}

DiskStore::~DiskStore() = default;

bool DiskStore::enabled() const noexcept { return impl_->usable; }

const std::filesystem::path& DiskStore::directory() const noexcept { return impl_->options.directory; }

std::optional<std::vector<std::uint8_t>> DiskStore::load(EntryKind kind, const KernelKey& key,
                                                         const DeviceFingerprint& fp, LoadOutcome* outcome) {
  LoadOutcome ignored;
  LoadOutcome& result = outcome ? *outcome : ignored;
  result = LoadOutcome::disabled;
  Impl& s = *impl_;
  if (!s.usable) return std::nullopt;
  result = LoadOutcome::missing;
  const fs::path path = s.entry_path(kind, key);
  Fd f(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  struct stat st;
  if (f.fd < 0 || ::fstat(f.fd, &st) != 0) {
    std::lock_guard lock(s.mutex);
    ++s.stats.misses;
    return std::nullopt;
  }
  Problem why;
  std::optional<EntryHeader> header;
  std::optional<std::vector<std::uint8_t>> payload;
  if (!S_ISREG(st.st_mode)) why = Problem{"type", "not a regular file"};
  if (!why) header = detail::read_header(f.fd, static_cast<std::uint64_t>(st.st_size), why);
  if (!why) why = detail::check_identity(*header, kind, key);
  if (!why && header->fingerprint_text != fp.text)
    why =
        Problem{"fingerprint", "written for the device '" + header->fingerprint_text + "', not for '" + fp.text + "'"};
  if (!why) payload = detail::read_payload(f.fd, *header, why);
  if (!why) why = detail::check_payload(kind, *payload);
  if (why) {
    s.drop(path, st, why);
    result = LoadOutcome::rejected;
    return std::nullopt;
  }
  result = LoadOutcome::hit;
  ::futimens(f.fd, nullptr);  // a hit makes the entry the most recently used
  std::lock_guard lock(s.mutex);
  ++s.stats.hits;
  return payload;
}

bool DiskStore::store(EntryKind kind, const KernelKey& key, const DeviceFingerprint& fp,
                      std::span<const std::uint8_t> payload, std::uint64_t cost_us) {
  Impl& s = *impl_;
  if (!s.usable) return false;
  if (fp.text.size() > detail::kMaxFingerprintBytes) {
    log(LogLevel::debug, "not caching an entry: its device fingerprint text exceeds 64 KiB");
    return false;
  }
  const std::vector<std::uint8_t> header = detail::encode_header(kind, key, fp.text, payload, cost_us);
  const std::uint64_t file_bytes = header.size() + payload.size();
  if (file_bytes > s.options.max_bytes) {
    log(LogLevel::debug,
        "not caching a " + std::to_string(file_bytes) + "-byte entry: larger than VGPU_CACHE_MAX_BYTES");
    return false;
  }
  s.ensure_scanned();
  s.ensure_kind_dir(kind);
  const fs::path path = s.entry_path(kind, key);
  const std::string pattern = (s.kind_dir(kind) / (std::string(detail::kTempPrefix) + key.hex() + "-XXXXXX")).string();
  std::string temp = pattern;
  int fd = ::mkostemp(temp.data(), O_CLOEXEC);
  if (fd < 0 && errno == ENOENT) {  // the directory was removed under us: make it again
    std::error_code ec;
    fs::create_directories(s.kind_dir(kind), ec);
    temp = pattern;
    fd = ::mkostemp(temp.data(), O_CLOEXEC);
  }
  if (fd < 0)
    return s.write_failed("cannot create a temp file in " + s.kind_dir(kind).string() + ": " + errno_text(errno));
  bool ok =
      detail::write_all(fd, header.data(), header.size()) && detail::write_all(fd, payload.data(), payload.size());
  int err = ok ? 0 : errno;
  ::fchmod(fd, 0644);
  if (::close(fd) != 0 && ok) ok = false, err = errno;
  if (ok && ::rename(temp.c_str(), path.c_str()) != 0) ok = false, err = errno;
  if (!ok) {
    ::unlink(temp.c_str());
    return s.write_failed("writing " + path.string() + ": " + errno_text(err));
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
  const fs::path path = s.entry_path(kind, key);
  const bool removed = ::unlink(path.c_str()) == 0;
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
