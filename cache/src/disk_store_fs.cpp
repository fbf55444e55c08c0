// SPDX-License-Identifier: Apache-2.0
// cache/src/disk_store_fs.cpp — no-follow folder opening, non-blocking regular-file opening,
// temp files relative to a folder, and the entry/temp name patterns (see disk_store_fs.hpp).
#include "disk_store_fs.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/random.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <mutex>
#include <set>
#include <system_error>

#include "vgpu/log.hpp"

namespace vgpu::cache::detail {
namespace fs = std::filesystem;

std::string errno_text(int e) { return std::error_code(e, std::generic_category()).message(); }

namespace {
std::atomic<WriteFault> g_write_fault{nullptr};
}  // namespace

void set_write_fault(WriteFault fault) noexcept { g_write_fault.store(fault); }

int write_fault(const fs::path& kind_dir, std::uint64_t file_bytes) noexcept {
  const WriteFault fault = g_write_fault.load();
  return fault ? fault(kind_dir, file_bytes) : 0;
}

Fd& Fd::operator=(Fd&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

Fd::~Fd() {
  if (fd_ >= 0) ::close(fd_);
}

namespace {

constexpr int kDirFlags = O_RDONLY | O_DIRECTORY | O_CLOEXEC;

OpenedDir unusable(fs::path path, std::string problem, std::string fix) {
  OpenedDir d;
  d.state = DirState::unusable;
  d.path = std::move(path);
  d.problem = std::move(problem);
  d.fix = std::move(fix);
  return d;
}

/// Describes an open() failure of a folder path (errno e) inside parent (or AT_FDCWD).
OpenedDir open_failed(int parent, const std::string& name, fs::path path, int e) {
  if (e == ENOENT) {
    OpenedDir d;
    d.path = std::move(path);
    return d;
  }
  struct stat st;
  if ((e == ELOOP || e == ENOTDIR) && ::fstatat(parent, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
      !S_ISDIR(st.st_mode)) {
    const std::string fix = "remove it (rm '" + path.string() +
                            "'); vgpu never follows a link below the cache directory and makes a real folder there";
    return unusable(path, file_type_text(st.st_mode) + ", not a directory", fix);
  }
  return unusable(path, "cannot open it: " + errno_text(e),
                  "let this user read, write and enter it (chmod u+rwx '" + path.string() +
                      "'), or set VGPU_CACHE_DIR to a directory of your own");
}

bool is_hex(std::string_view s) noexcept {
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

bool is_alnum(char c) noexcept { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

}  // namespace

OpenedDir open_base_dir(const fs::path& dir, bool create) {
  if (create) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec)
      return unusable(dir, "cannot create it: " + ec.message(),
                      "set VGPU_CACHE_DIR to a writable directory, or VGPU_CACHE_DISABLE=1 to turn the disk cache off");
  }
  OpenedDir d;
  d.path = dir;
  d.fd = Fd(::open(dir.c_str(), kDirFlags));
  if (d.fd) {
    d.state = DirState::ok;
    return d;
  }
  const int e = errno;
  if (e == ENOENT || e == ENOTDIR) return d;  // nothing there (or a path through a file): nothing of ours
  return unusable(dir, "cannot open it: " + errno_text(e),
                  "set VGPU_CACHE_DIR to a writable directory, or VGPU_CACHE_DISABLE=1 to turn the disk cache off");
}

OpenedDir open_sub_dir(const OpenedDir& parent, const std::string& name, bool create) {
  fs::path path = parent.path / name;
  if (parent.state != DirState::ok) {
    OpenedDir d;
    d.path = std::move(path);
    return d;  // absent (an unusable parent is reported for itself)
  }
  for (int attempt = 0; attempt < 2; ++attempt) {
    OpenedDir d;
    d.path = path;
    d.fd = Fd(::openat(parent.fd.get(), name.c_str(), kDirFlags | O_NOFOLLOW));
    if (d.fd) {
      d.state = DirState::ok;
      return d;
    }
    const int e = errno;
    if (e != ENOENT || !create || attempt == 1) return open_failed(parent.fd.get(), name, path, e);
    if (::mkdirat(parent.fd.get(), name.c_str(), 0755) != 0 && errno != EEXIST)
      return open_failed(parent.fd.get(), name, path, errno);
  }
  return {};  // not reached
}

std::string file_type_text(mode_t mode) {
  if (S_ISLNK(mode)) return "a symlink";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISREG(mode)) return "a regular file";
  return "an unknown file type";
}

Problem type_problem(mode_t mode) {
  std::string details = file_type_text(mode) + ", not a regular file";
  if (S_ISLNK(mode)) details += " (vgpu never follows a link below the cache directory)";
  return Problem{"type", details};
}

std::vector<std::string> names_in(int dirfd, int& error) {
  error = 0;
  std::vector<std::string> names;
  const int copy = ::fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
  if (copy < 0) {
    error = errno;
    return names;
  }
  DIR* dir = ::fdopendir(copy);
  if (!dir) {
    error = errno;
    ::close(copy);
    return names;
  }
  ::rewinddir(dir);  // the duplicate shares its offset with dirfd
  for (;;) {
    errno = 0;
    const dirent* e = ::readdir(dir);
    if (!e) {
      error = errno;
      break;
    }
    const std::string_view name = e->d_name;
    if (name != "." && name != "..") names.emplace_back(name);
  }
  ::closedir(dir);
  return names;
}

bool stat_at(int dirfd, const std::string& name, struct stat& st) {
  return ::fstatat(dirfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
}

Fd open_regular_at(int dirfd, const std::string& name, struct stat& st, Problem& problem) {
  struct stat before;
  if (!stat_at(dirfd, name, before)) {
    if (errno != ENOENT) problem = Problem{"unreadable", "cannot look at it: " + errno_text(errno)};
    return Fd();
  }
  if (!S_ISREG(before.st_mode)) {
    problem = type_problem(before.st_mode);
    return Fd();
  }
  // O_NONBLOCK and O_NOCTTY: should a FIFO or device be swapped in after fstatat, opening it
  // neither blocks nor takes a terminal; fstat below then refuses it.
  Fd f(::openat(dirfd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
  if (!f) {
    const int e = errno;
    if (e == ENOENT) return Fd();
    struct stat now;
    if (e == ELOOP && stat_at(dirfd, name, now))
      problem = type_problem(now.st_mode);
    else
      problem = Problem{"unreadable", "cannot open it: " + errno_text(e)};
    return Fd();
  }
  if (::fstat(f.get(), &st) != 0) {
    problem = Problem{"unreadable", "cannot stat it: " + errno_text(errno)};
    return Fd();
  }
  if (!S_ISREG(st.st_mode)) {
    problem = type_problem(st.st_mode);
    return Fd();
  }
  return f;
}

int make_temp_at(int dirfd, const std::string& prefix, std::string& name) {
  static constexpr char kChars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  for (int attempt = 0; attempt < 100; ++attempt) {
    unsigned char random[6];
    if (::getrandom(random, sizeof random, 0) != static_cast<ssize_t>(sizeof random)) {
      // No entropy call (very old kernel): any distinct-enough bytes do, O_EXCL guards.
      const std::uint64_t mix = (static_cast<std::uint64_t>(::getpid()) << 32) ^
                                static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(&random)) ^
                                static_cast<std::uint64_t>(attempt) * 0x9e3779b97f4a7c15ull;
      for (int i = 0; i < 6; ++i) random[i] = static_cast<unsigned char>(mix >> (8 * i));
    }
    name = prefix;
    for (unsigned char r : random) name += kChars[r % (sizeof kChars - 1)];
    const int fd = ::openat(dirfd, name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd >= 0 || errno != EEXIST) return fd;
  }
  errno = EEXIST;
  return -1;
}

bool is_entry_name(std::string_view name) noexcept {
  return name.size() == 32 + kEntrySuffix.size() && name.ends_with(kEntrySuffix) && is_hex(name.substr(0, 32));
}

bool is_temp_name(std::string_view name) noexcept {
  if (name.size() != kTempPrefix.size() + 32 + 1 + 6 || !name.starts_with(kTempPrefix)) return false;
  const std::string_view rest = name.substr(kTempPrefix.size());
  if (!is_hex(rest.substr(0, 32)) || rest[32] != '-') return false;
  for (char c : rest.substr(33))
    if (!is_alnum(c)) return false;
  return true;
}

void warn_once(const std::string& key, const std::string& message) {
  static std::mutex mutex;
  static std::set<std::string>& warned = *new std::set<std::string>();  // leaked: background writes warn too
  bool first;
  {
    std::lock_guard lock(mutex);
    first = warned.insert(key).second;
  }
  log(first ? LogLevel::warn : LogLevel::debug, message);
}

}  // namespace vgpu::cache::detail
