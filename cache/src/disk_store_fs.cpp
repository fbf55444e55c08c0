// SPDX-License-Identifier: Apache-2.0
// cache/src/disk_store_fs.cpp — no-follow folder opening, non-blocking regular-file opening,
// temp files relative to a folder, and the entry/temp name patterns (see disk_store_fs.hpp),
// over the platform layer's files (vgpu/platform/files.hpp).
#include "disk_store_fs.hpp"

#include <atomic>
#include <cerrno>
#include <mutex>
#include <set>

#include "vgpu/log.hpp"
#include "vgpu/platform/random.hpp"

namespace vgpu::cache::detail {
namespace fs = std::filesystem;

namespace {
std::atomic<WriteFault> g_write_fault{nullptr};
}  // namespace

void set_write_fault(WriteFault fault) noexcept { g_write_fault.store(fault); }

int write_fault(const fs::path& kind_dir, std::uint64_t file_bytes) noexcept {
  const WriteFault fault = g_write_fault.load();
  return fault ? fault(kind_dir, file_bytes) : 0;
}

namespace {

OpenedDir unusable(fs::path path, std::string problem, std::string fix) {
  OpenedDir d;
  d.state = DirState::unusable;
  d.path = std::move(path);
  d.problem = std::move(problem);
  d.fix = std::move(fix);
  return d;
}

/// Describes a failure (errno e) to open the folder name inside parent.
OpenedDir open_failed(const platform::Directory& parent, const std::string& name, fs::path path, int e) {
  if (e == ENOENT) {
    OpenedDir d;
    d.path = std::move(path);
    return d;
  }
  platform::FileStatus st;
  if ((e == ELOOP || e == ENOTDIR) && parent.status_of(name, st) == 0 && st.type != platform::FileType::directory) {
    const std::string fix = "remove it (rm '" + path.string() +
                            "'); vgpu never follows a link below the cache directory and makes a real folder there";
    return unusable(path, std::string(platform::file_type_text(st.type)) + ", not a directory", fix);
  }
  return unusable(path, "cannot open it: " + error_text(e),
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
  int e = 0;
  d.dir = platform::Directory::open(dir, e);
  if (d.dir) {
    d.state = DirState::ok;
    return d;
  }
  if (e == ENOENT || e == ENOTDIR) return d;  // nothing there (or a path through a file): nothing of ours
  return unusable(dir, "cannot open it: " + error_text(e),
                  "set VGPU_CACHE_DIR to a writable directory, or VGPU_CACHE_DISABLE=1 to turn the disk cache off");
}

OpenedDir open_sub_dir(const OpenedDir& parent, const std::string& name, bool create) {
  fs::path path = parent.path / name;
  if (parent.state != DirState::ok) {
    OpenedDir d;
    d.path = std::move(path);
    return d;  // absent (an unusable parent is reported for itself)
  }
  OpenedDir d;
  d.path = path;
  int e = 0;
  d.dir = parent.dir.open_sub(name, create, e);
  if (!d.dir) return open_failed(parent.dir, name, std::move(path), e);
  d.state = DirState::ok;
  return d;
}

Problem type_problem(platform::FileType type) {
  std::string details = std::string(platform::file_type_text(type)) + ", not a regular file";
  if (type == platform::FileType::symlink) details += " (vgpu never follows a link below the cache directory)";
  return Problem{"type", details};
}

platform::File open_regular_at(const platform::Directory& dir, const std::string& name, platform::FileStatus& st,
                               Problem& problem) {
  platform::FileStatus before;
  if (const int e = dir.status_of(name, before); e != 0) {
    if (e != ENOENT) problem = Problem{"unreadable", "cannot look at it: " + error_text(e)};
    return {};
  }
  if (!before.regular()) {
    problem = type_problem(before.type);
    return {};
  }
  int e = 0;
  platform::File f = dir.open_for_reading(name, e);
  if (!f) {
    if (e == ENOENT) return {};
    platform::FileStatus now;
    if (e == ELOOP && dir.status_of(name, now) == 0)
      problem = type_problem(now.type);
    else
      problem = Problem{"unreadable", "cannot open it: " + error_text(e)};
    return {};
  }
  if (const int se = f.status(st); se != 0) {
    problem = Problem{"unreadable", "cannot stat it: " + error_text(se)};
    return {};
  }
  if (!st.regular()) {  // swapped for a FIFO or device after the look
    problem = type_problem(st.type);
    return {};
  }
  return f;
}

platform::File make_temp_at(const platform::Directory& dir, const std::string& prefix, std::string& name, int& error) {
  static constexpr char kChars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  for (int attempt = 0; attempt < 100; ++attempt) {
    unsigned char random[6];
    platform::random_bytes(random, sizeof random);  // guessable bytes when the OS has none: the exclusive create guards
    name = prefix;
    for (unsigned char r : random) name += kChars[r % (sizeof kChars - 1)];
    platform::File f = dir.create_exclusive(name, error);
    if (f || error != EEXIST) return f;
  }
  error = EEXIST;
  return {};
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
