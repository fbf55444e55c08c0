// SPDX-License-Identifier: Apache-2.0
// core/base/src/platform/posix/files_posix.cpp — files and folders by descriptor on Linux and
// macOS: openat/fstatat(AT_SYMLINK_NOFOLLOW)/unlinkat/renameat/mkdirat with O_NOFOLLOW.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <system_error>

#include "vgpu/platform/files.hpp"

namespace vgpu::platform {
namespace {

constexpr int kDirFlags = O_RDONLY | O_DIRECTORY | O_CLOEXEC;

FileType type_of(mode_t mode) noexcept {
  if (S_ISREG(mode)) return FileType::regular;
  if (S_ISDIR(mode)) return FileType::directory;
  if (S_ISLNK(mode)) return FileType::symlink;
  if (S_ISFIFO(mode)) return FileType::fifo;
  if (S_ISSOCK(mode)) return FileType::socket;
  if (S_ISCHR(mode)) return FileType::char_device;
  if (S_ISBLK(mode)) return FileType::block_device;
  return FileType::other;
}

FileStatus status_from(const struct stat& s) noexcept {
  FileStatus st;
  st.type = type_of(s.st_mode);
  st.size = static_cast<std::uint64_t>(s.st_size);
#if defined(__APPLE__)
  st.mtime_ns = static_cast<std::int64_t>(s.st_mtimespec.tv_sec) * 1000000000 + s.st_mtimespec.tv_nsec;
#else
  st.mtime_ns = static_cast<std::int64_t>(s.st_mtim.tv_sec) * 1000000000 + s.st_mtim.tv_nsec;
#endif
  st.device = static_cast<std::uint64_t>(s.st_dev);
  st.id = static_cast<std::uint64_t>(s.st_ino);
  st.permissions = static_cast<std::uint32_t>(s.st_mode & 07777);
  st.owner = static_cast<std::uint32_t>(s.st_uid);
  st.group = static_cast<std::uint32_t>(s.st_gid);
  return st;
}

int fd_of(std::intptr_t h) noexcept { return static_cast<int>(h); }

}  // namespace

std::string error_text(int error) { return std::error_code(error, std::generic_category()).message(); }

bool is_disk_full(int error) noexcept {
#ifdef EDQUOT
  if (error == EDQUOT) return true;
#endif
  return error == ENOSPC;
}

const char* file_type_text(FileType type) noexcept {
  switch (type) {
    case FileType::symlink:
      return "a symlink";
    case FileType::directory:
      return "a directory";
    case FileType::fifo:
      return "a FIFO";
    case FileType::socket:
      return "a socket";
    case FileType::char_device:
      return "a character device";
    case FileType::block_device:
      return "a block device";
    case FileType::regular:
      return "a regular file";
    case FileType::other:
      break;
  }
  return "an unknown file type";
}

// ---- File

File& File::operator=(File&& other) noexcept {
  if (this != &other) {
    if (handle_ != kNone) ::close(fd_of(handle_));
    handle_ = other.handle_;
    other.handle_ = kNone;
  }
  return *this;
}

File::~File() {
  if (handle_ != kNone) ::close(fd_of(handle_));
}

std::size_t File::read_at(void* out, std::size_t n, std::uint64_t offset) const noexcept {
  auto* p = static_cast<unsigned char*>(out);
  std::size_t done = 0;
  while (done < n) {
    const ssize_t r = ::pread(fd_of(handle_), p + done, n - done, static_cast<off_t>(offset + done));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    done += static_cast<std::size_t>(r);
  }
  return done;
}

int File::write_all(const void* data, std::size_t n) noexcept {
  const auto* p = static_cast<const unsigned char*>(data);
  while (n > 0) {
    const ssize_t r = ::write(fd_of(handle_), p, n);
    if (r < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    p += r;
    n -= static_cast<std::size_t>(r);
  }
  return 0;
}

int File::status(FileStatus& st) const noexcept {
  struct stat s;
  if (::fstat(fd_of(handle_), &s) != 0) return errno;
  st = status_from(s);
  return 0;
}

void File::touch() noexcept { ::futimens(fd_of(handle_), nullptr); }

void File::share_read() noexcept { ::fchmod(fd_of(handle_), 0644); }

int File::sync() noexcept { return ::fsync(fd_of(handle_)) == 0 ? 0 : errno; }

int File::take_attributes_of(const FileStatus& st) noexcept {
  struct stat mine;
  if (::fstat(fd_of(handle_), &mine) == 0 && (mine.st_uid != st.owner || mine.st_gid != st.group))
    (void)::fchown(fd_of(handle_), st.owner, st.group);  // root may; anyone else keeps the file as theirs
  return ::fchmod(fd_of(handle_), static_cast<mode_t>(st.permissions)) == 0 ? 0 : errno;
}

int File::close() noexcept {
  if (handle_ == kNone) return 0;
  const int r = ::close(fd_of(handle_));
  handle_ = kNone;
  return r == 0 ? 0 : errno;
}

// ---- Directory

Directory& Directory::operator=(Directory&& other) noexcept {
  if (this != &other) {
    if (handle_ != kNone) ::close(fd_of(handle_));
    handle_ = other.handle_;
    other.handle_ = kNone;
  }
  return *this;
}

Directory::~Directory() {
  if (handle_ != kNone) ::close(fd_of(handle_));
}

Directory Directory::open(const std::filesystem::path& path, int& error) {
  Directory d;
  const int fd = ::open(path.c_str(), kDirFlags);
  error = fd < 0 ? errno : 0;
  if (fd >= 0) d.handle_ = fd;
  return d;
}

Directory Directory::open_sub(const std::string& name, bool create, int& error) const {
  Directory d;
  for (int attempt = 0; attempt < 2; ++attempt) {
    const int fd = ::openat(fd_of(handle_), name.c_str(), kDirFlags | O_NOFOLLOW);
    if (fd >= 0) {
      d.handle_ = fd;
      error = 0;
      return d;
    }
    error = errno;
    if (error != ENOENT || !create || attempt == 1) return d;
    if (::mkdirat(fd_of(handle_), name.c_str(), 0755) != 0 && errno != EEXIST) {
      error = errno;
      return d;
    }
  }
  return d;
}

std::vector<std::string> Directory::names(int& error) const {
  error = 0;
  std::vector<std::string> names;
  // A duplicate: fdopendir takes its descriptor over, and this folder stays open.
  const int copy = ::fcntl(fd_of(handle_), F_DUPFD_CLOEXEC, 0);
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
  ::rewinddir(dir);  // the duplicate shares its offset with this folder's descriptor
  for (;;) {
    errno = 0;
    const dirent* e = ::readdir(dir);
    if (!e) {
      error = errno;
      break;
    }
    const std::string name = e->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  ::closedir(dir);
  return names;
}

int Directory::status_of(const std::string& name, FileStatus& st) const noexcept {
  struct stat s;
  if (::fstatat(fd_of(handle_), name.c_str(), &s, AT_SYMLINK_NOFOLLOW) != 0) return errno;
  st = status_from(s);
  return 0;
}

File Directory::open_for_reading(const std::string& name, int& error) const {
  File f;
  // O_NONBLOCK and O_NOCTTY: should a FIFO or device be swapped in after the caller looked,
  // opening it neither blocks nor takes a terminal; the caller's status() then refuses it.
  const int fd = ::openat(fd_of(handle_), name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  error = fd < 0 ? errno : 0;
  if (fd >= 0) f.handle_ = fd;
  return f;
}

File Directory::create_exclusive(const std::string& name, int& error) const {
  File f;
  const int fd = ::openat(fd_of(handle_), name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  error = fd < 0 ? errno : 0;
  if (fd >= 0) f.handle_ = fd;
  return f;
}

int Directory::rename(const std::string& from, const std::string& to) const noexcept {
  return ::renameat(fd_of(handle_), from.c_str(), fd_of(handle_), to.c_str()) == 0 ? 0 : errno;
}

int Directory::remove(const std::string& name) const noexcept {
  return ::unlinkat(fd_of(handle_), name.c_str(), 0) == 0 ? 0 : errno;
}

// ---- paths

int status_no_follow(const std::filesystem::path& path, FileStatus& st) noexcept {
  struct stat s;
  if (::lstat(path.c_str(), &s) != 0) return errno;
  st = status_from(s);
  return 0;
}

File create_new_file(const std::filesystem::path& path, int& error) {
  File f;
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
  error = fd < 0 ? errno : 0;
  if (fd >= 0) f.handle_ = fd;
  return f;
}

File open_file_for_reading(const std::filesystem::path& path, int& error) {
  File f;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  error = fd < 0 ? errno : 0;
  if (fd >= 0) f.handle_ = fd;
  return f;
}

int rename_replacing(const std::filesystem::path& from, const std::filesystem::path& to) noexcept {
  return ::rename(from.c_str(), to.c_str()) == 0 ? 0 : errno;
}

int remove_file(const std::filesystem::path& path) noexcept { return ::unlink(path.c_str()) == 0 ? 0 : errno; }

}  // namespace vgpu::platform
