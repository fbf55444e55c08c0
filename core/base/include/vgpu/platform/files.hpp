// SPDX-License-Identifier: Apache-2.0
// vgpu/platform/files.hpp — files and folders opened by handle, for the kernel cache, which
// treats its directory as untrusted input (docs/cache-format.md, "The directory is untrusted
// input"). Below a folder opened with Directory::open, every operation is relative to an open
// folder and never follows a link: POSIX works with openat/fstatat(AT_SYMLINK_NOFOLLOW)/
// unlinkat/renameat/mkdirat and O_NOFOLLOW; Windows opens with FILE_FLAG_OPEN_REPARSE_POINT,
// treats every reparse point (symlink, junction, mount point) as a link, and keeps each opened
// folder's handle without FILE_SHARE_DELETE, so that no folder on the way can be renamed or
// replaced while it is used. A file is opened for reading only after a no-follow look says it
// is a regular file, and then so that a FIFO or device swapped in meanwhile neither blocks nor
// is read (the caller checks status() of the opened file). Part of the platform layer
// (docs/platforms.md). Internal to vgpu.
//
// Errors are errno values on every OS (Windows' error codes are mapped onto them: ENOENT,
// EEXIST, ENOSPC, EACCES, ELOOP for a link where none may be, ENOTDIR …), so the cache's
// decisions read the same everywhere. Thread-safety: distinct objects may be used from
// different threads; one object is used by one thread at a time (the cache opens its own per call).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace vgpu::platform {

/// Returns the text of an errno value (thread-safe, unlike strerror).
std::string error_text(int error);

/// Returns whether error means the disk or the user's quota is full.
bool is_disk_full(int error) noexcept;

/// What a name in a folder is.
enum class FileType { regular, directory, symlink, fifo, socket, char_device, block_device, other };

/// Returns what a file of this type is, for messages: "a symlink", "a directory", "a FIFO", "a socket",
/// "a character device", "a block device", "a regular file", "an unknown file type".
const char* file_type_text(FileType type) noexcept;

/// What a look at a file found.
struct FileStatus {
  FileType type = FileType::other;
  std::uint64_t size = 0;              ///< bytes (regular files)
  std::int64_t mtime_ns = 0;           ///< last modification, nanoseconds since 1970
  std::uint64_t device = 0;            ///< the volume
  std::uint64_t id = 0;                ///< the file on its volume (inode, file index)
  std::uint32_t permissions = 0;       ///< POSIX mode bits (07777); 0 on Windows
  std::uint32_t owner = 0, group = 0;  ///< POSIX uid and gid; 0 on Windows
  /// Returns whether this is a regular file.
  bool regular() const noexcept { return type == FileType::regular; }
};

/// Returns whether two statuses describe the same file (volume and id).
inline bool same_file(const FileStatus& a, const FileStatus& b) noexcept {
  return a.device == b.device && a.id == b.id;
}

/// An open file, closed when it goes out of scope. Movable, not copyable.
class File {
 public:
  File() = default;
  File(File&& other) noexcept : handle_(other.handle_) { other.handle_ = kNone; }
  File& operator=(File&& other) noexcept;
  File(const File&) = delete;
  File& operator=(const File&) = delete;
  ~File();

  /// Returns whether a file is open.
  explicit operator bool() const noexcept { return handle_ != kNone; }
  /// Reads up to n bytes at offset into out; returns how many were read (fewer at the end of
  /// the file or on an error).
  std::size_t read_at(void* out, std::size_t n, std::uint64_t offset) const noexcept;
  /// Writes n bytes at the current position; returns 0 or the errno of the failure.
  int write_all(const void* data, std::size_t n) noexcept;
  /// Looks at the open file itself; returns 0 or an errno.
  int status(FileStatus& st) const noexcept;
  /// Sets its modification time to now (the cache's "recently used"); errors are ignored.
  void touch() noexcept;
  /// Lets every user read it (POSIX mode 0644; nothing on Windows, where folders' ACLs rule).
  void share_read() noexcept;
  /// Flushes what was written to the disk; returns 0 or an errno.
  int sync() noexcept;
  /// Gives it the permissions and, where allowed (root), the owner and group of the file st
  /// describes, which it is about to replace; returns 0 or the errno of failed permissions
  /// (nothing to do on Windows).
  int take_attributes_of(const FileStatus& st) noexcept;
  /// Closes it; returns 0 or the errno of a failed close (a late write error).
  int close() noexcept;

 private:
  friend class Directory;
  friend File create_new_file(const std::filesystem::path& path, int& error);
  friend File open_file_for_reading(const std::filesystem::path& path, int& error);
  static constexpr std::intptr_t kNone = -1;
  std::intptr_t handle_ = kNone;  // a file descriptor or a HANDLE
};

/// An open folder, closed when it goes out of scope. Movable, not copyable.
class Directory {
 public:
  Directory() = default;
  Directory(Directory&& other) noexcept : handle_(other.handle_) { other.handle_ = kNone; }
  Directory& operator=(Directory&& other) noexcept;
  Directory(const Directory&) = delete;
  Directory& operator=(const Directory&) = delete;
  ~Directory();

  /// Opens the folder at path, following a link there (the user chose the path, e.g. a ~/.cache
  /// that links elsewhere); error: 0 or an errno (ENOENT/ENOTDIR: nothing there).
  static Directory open(const std::filesystem::path& path, int& error);
  /// Opens the folder name inside this one without following a link (a link or a file there:
  /// ELOOP or ENOTDIR); create: makes it first (mode 0755) when missing.
  Directory open_sub(const std::string& name, bool create, int& error) const;
  /// Returns whether a folder is open.
  explicit operator bool() const noexcept { return handle_ != kNone; }

  /// Returns the names in this folder (not "." and ".."); error: 0 or an errno.
  std::vector<std::string> names(int& error) const;
  /// Looks at name without following a link; returns 0 or an errno (ENOENT: nothing there).
  int status_of(const std::string& name, FileStatus& st) const noexcept;
  /// Opens name for reading without following a link, without blocking on a FIFO and without
  /// taking a terminal; error: 0 or an errno (ELOOP: a link is there).
  File open_for_reading(const std::string& name, int& error) const;
  /// Creates name for reading and writing, failing with EEXIST when anything (a link too) is
  /// there; mode 0600 until share_read().
  File create_exclusive(const std::string& name, int& error) const;
  /// Renames from to to within this folder, replacing a file at to; returns 0 or an errno.
  int rename(const std::string& from, const std::string& to) const noexcept;
  /// Removes the file name (never a folder); returns 0 or an errno.
  int remove(const std::string& name) const noexcept;

 private:
  static constexpr std::intptr_t kNone = -1;
  std::intptr_t handle_ = kNone;  // a file descriptor or a HANDLE
};

/// Looks at path without following a link at its last component; returns 0 or an errno.
int status_no_follow(const std::filesystem::path& path, FileStatus& st) noexcept;

/// Creates the file at path for writing, failing with EEXIST when anything (a link too) is
/// there; mode 0666 less the umask.
File create_new_file(const std::filesystem::path& path, int& error);

/// Opens the file at path (following a link: the user chose it) for reading, without blocking
/// on a FIFO and without taking a terminal; the caller checks status().
File open_file_for_reading(const std::filesystem::path& path, int& error);

/// Renames the file from to to, replacing a file at to atomically; returns 0 or an errno.
int rename_replacing(const std::filesystem::path& from, const std::filesystem::path& to) noexcept;

/// Removes the file at path (never a folder); returns 0 or an errno.
int remove_file(const std::filesystem::path& path) noexcept;

}  // namespace vgpu::platform
