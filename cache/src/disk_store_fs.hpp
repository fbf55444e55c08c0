// SPDX-License-Identifier: Apache-2.0
// cache/src/disk_store_fs.hpp — the file-system primitives of the L2 store, which treats its
// directory as untrusted input (docs/cache-format.md, "The directory is untrusted input"):
// folders below the user's directory are opened with O_NOFOLLOW and everything else works
// relative to their descriptors (openat, fstatat(AT_SYMLINK_NOFOLLOW), unlinkat, renameat,
// mkdirat), so no symlink below the user's directory is ever followed; entry files are
// opened only when fstatat says they are regular files, and then with O_NONBLOCK, so no FIFO
// or device can block a caller. Internal to cache/src; every function is thread-safe.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "disk_store_format.hpp"

namespace vgpu::cache::detail {

/// Returns the text of an errno value (thread-safe, unlike strerror).
std::string errno_text(int e);

/// An owned file descriptor, closed when it goes out of scope. Movable, not copyable.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) noexcept : fd_(fd) {}
  Fd(Fd&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  Fd& operator=(Fd&& other) noexcept;
  ~Fd();
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  /// Returns the descriptor (-1 when none).
  int get() const noexcept { return fd_; }
  /// Returns whether a descriptor is held.
  explicit operator bool() const noexcept { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

/// Returns whether two stats describe the same file (device and inode).
inline bool same_file(const struct stat& a, const struct stat& b) {
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/// Returns the modification time in nanoseconds.
inline std::int64_t mtime_ns(const struct stat& st) {
  return static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

/// What opening a folder found.
enum class DirState {
  ok,        ///< opened: fd is valid
  absent,    ///< nothing by that name (or a parent is absent)
  unusable,  ///< something else is there (a symlink, a file), or it cannot be opened
};

/// A folder opened for one operation, or why not.
struct OpenedDir {
  Fd fd;
  DirState state = DirState::absent;
  std::filesystem::path path;  ///< for messages
  std::string problem;         ///< when unusable: what is there ("a symlink, not a directory") or the errno text
  std::string fix;             ///< when unusable: what the user can do, a sentence without "Fix: "
};

/// Opens the user-chosen directory itself; a symlink there is followed (the user picked the
/// path, e.g. a ~/.cache that links elsewhere). create: make it and its parents when missing.
OpenedDir open_base_dir(const std::filesystem::path& dir, bool create);

/// Opens the folder name inside parent (open as parent_path/name) without following a
/// symlink; anything but a directory there makes it unusable. create: mkdirat it (0755)
/// first when missing.
OpenedDir open_sub_dir(const OpenedDir& parent, const std::string& name, bool create);

/// Returns what a file of this mode is, for messages: "a symlink", "a directory", "a FIFO",
/// "a socket", "a character device", "a block device", "a regular file", "an unknown file type".
std::string file_type_text(mode_t mode);

/// Returns the names in the open folder dirfd (not "." and ".."), read through a duplicate of
/// the descriptor; sets error (errno) when the folder could not be read.
std::vector<std::string> names_in(int dirfd, int& error);

/// Looks at name in dirfd without following a symlink (fstatat AT_SYMLINK_NOFOLLOW): returns
/// false (errno set) when it cannot, e.g. ENOENT.
bool stat_at(int dirfd, const std::string& name, struct stat& st);

/// Opens name in dirfd for reading only when it is a regular file: fstatat first (a FIFO,
/// device, socket, directory or symlink is never opened), then
/// openat(O_RDONLY|O_NOFOLLOW|O_NONBLOCK|O_NOCTTY|O_CLOEXEC) and fstat, which must show the
/// same regular file. On success st holds its fstat. Otherwise returns no descriptor and either
/// sets problem ("type": what is there instead; "unreadable": the open failed) or, when nothing
/// is there (ENOENT), leaves problem empty.
Fd open_regular_at(int dirfd, const std::string& name, struct stat& st, Problem& problem);

/// Returns the Problem ("type") for a non-regular file of this mode.
Problem type_problem(mode_t mode);

/// Creates a new file named prefix + 6 random [A-Za-z0-9] in dirfd (O_CREAT|O_EXCL|O_NOFOLLOW,
/// mode 0600), as mkostemp does but relative to a folder; sets name. Returns -1 (errno set)
/// when it cannot.
int make_temp_at(int dirfd, const std::string& prefix, std::string& name);

/// A test's stand-in for the file system's answer to an entry write (tests/cache/l2_full_disk_test.cpp
/// simulates a full disk with it): store() calls it before it writes an entry of file_bytes
/// into the kind folder kind_dir, and takes a nonzero return as that write's errno (nothing is
/// written). Without one (the default) the disk answers.
using WriteFault = int (*)(const std::filesystem::path& kind_dir, std::uint64_t file_bytes);
/// Installs fault (null: none) for every store of this process; thread-safe.
void set_write_fault(WriteFault fault) noexcept;
/// Returns the installed fault's answer for a write, or 0 when none is installed; thread-safe.
int write_fault(const std::filesystem::path& kind_dir, std::uint64_t file_bytes) noexcept;

/// Returns whether name is an entry file's name: 32 lower-case hex digits + ".vgc".
bool is_entry_name(std::string_view name) noexcept;
/// Returns whether name is a writer's temp file's name: ".tmp-" + 32 lower-case hex digits +
/// "-" + 6 [A-Za-z0-9] (what store() creates).
bool is_temp_name(std::string_view name) noexcept;

/// Logs message as a warning the first time key is seen in this process (later: at debug).
void warn_once(const std::string& key, const std::string& message);

}  // namespace vgpu::cache::detail
