// SPDX-License-Identifier: Apache-2.0
// core/base/src/platform/windows/files_windows.cpp — files and folders by handle on Windows
// (vgpu/platform/files.hpp). Windows has no openat: an opened folder is held without
// FILE_SHARE_DELETE, so neither it nor any folder above it can be renamed or removed while it
// is open, and a name inside it is reached through the folder's final path ("\\?\C:\…", from
// GetFinalPathNameByHandleW, which also keeps device names such as CON from being
// interpreted). Every open below it passes FILE_FLAG_OPEN_REPARSE_POINT, so a symlink,
// junction or mount point is opened as itself and refused (ELOOP), never followed.
#include <windows.h>

#include <cerrno>
#include <system_error>

#include "vgpu/platform/files.hpp"
#include "windows_error.hpp"

namespace vgpu::platform {
namespace {

using detail::last_errno;

HANDLE handle_of(std::intptr_t h) noexcept { return reinterpret_cast<HANDLE>(h); }
std::intptr_t from_handle(HANDLE h) noexcept { return reinterpret_cast<std::intptr_t>(h); }

constexpr DWORD kShareNoDelete = FILE_SHARE_READ | FILE_SHARE_WRITE;
constexpr DWORD kShareAll = FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE;

/// 100 ns ticks from 1601 to 1970.
constexpr std::int64_t kEpochTicks = 116444736000000000LL;

std::int64_t unix_ns(const FILETIME& t) noexcept {
  const std::int64_t ticks = (static_cast<std::int64_t>(t.dwHighDateTime) << 32) | t.dwLowDateTime;
  return (ticks - kEpochTicks) * 100;
}

/// Fills st from an open handle; returns 0 or an errno.
int status_of_handle(HANDLE h, FileStatus& st) noexcept {
  BY_HANDLE_FILE_INFORMATION info;
  if (!::GetFileInformationByHandle(h, &info)) return last_errno();
  st = FileStatus{};
  if (info.dwFileAttributes & FILE_ATTRIBUTE_REPARSE_POINT)
    st.type = FileType::symlink;  // symlinks, junctions, mount points: all links to vgpu
  else if (info.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY)
    st.type = FileType::directory;
  else if (::GetFileType(h) == FILE_TYPE_DISK)
    st.type = FileType::regular;
  else
    st.type = FileType::char_device;
  st.size = (static_cast<std::uint64_t>(info.nFileSizeHigh) << 32) | info.nFileSizeLow;
  st.mtime_ns = unix_ns(info.ftLastWriteTime);
  st.device = info.dwVolumeSerialNumber;
  st.id = (static_cast<std::uint64_t>(info.nFileIndexHigh) << 32) | info.nFileIndexLow;
  return 0;
}

/// Opens path as itself (never through a reparse point) for a look; INVALID_HANDLE_VALUE + errno.
HANDLE open_for_look(const std::wstring& path, int& error) noexcept {
  const HANDLE h = ::CreateFileW(path.c_str(), FILE_READ_ATTRIBUTES, kShareAll, nullptr, OPEN_EXISTING,
                                 FILE_FLAG_BACKUP_SEMANTICS | FILE_FLAG_OPEN_REPARSE_POINT, nullptr);
  error = h == INVALID_HANDLE_VALUE ? last_errno() : 0;
  return h;
}

/// Closes h when it is a handle.
void close_handle(HANDLE h) noexcept {
  if (h != INVALID_HANDLE_VALUE && h != nullptr) ::CloseHandle(h);
}

/// Returns the folder's final path ("\\?\C:\…"), empty (errno set) when Windows will not say.
std::wstring final_path(HANDLE dir, int& error) {
  std::wstring buffer(MAX_PATH, L'\0');
  for (;;) {
    const DWORD n = ::GetFinalPathNameByHandleW(dir, buffer.data(), static_cast<DWORD>(buffer.size()), 0);
    if (n == 0) {
      error = last_errno();
      return {};
    }
    if (n < buffer.size()) {
      buffer.resize(n);
      error = 0;
      return buffer;
    }
    buffer.resize(n + 1);
  }
}

/// Returns the path of name inside the open folder dir (only a plain name: no separators).
std::wstring child(std::intptr_t dir, const std::string& name, int& error) {
  if (name.empty() || name.find_first_of("/\\:") != std::string::npos || name == "." || name == "..") {
    error = EINVAL;
    return {};
  }
  std::wstring base = final_path(handle_of(dir), error);
  if (base.empty()) return {};
  if (base.back() != L'\\') base += L'\\';
  return base + std::filesystem::path(name).wstring();
}

/// Renames a over b, replacing b. Windows refuses to replace a file that another handle holds
/// open — ERROR_ACCESS_DENIED even when that handle shares delete access, as the cache's
/// readers do — until it is closed; a reader holds an entry for one read, so the rename is
/// tried again for up to ~200 ms before its error is returned. (Windows 10 1709's POSIX-semantics
/// rename, FileRenameInfoEx, would replace it at once; not used yet.)
int move_replacing(const std::wstring& a, const std::wstring& b) noexcept {
  for (int attempt = 0;; ++attempt) {
    if (::MoveFileExW(a.c_str(), b.c_str(), MOVEFILE_REPLACE_EXISTING)) return 0;
    const DWORD code = ::GetLastError();
    if ((code != ERROR_ACCESS_DENIED && code != ERROR_SHARING_VIOLATION) || attempt == 200) {
      ::SetLastError(code);
      return last_errno();
    }
    ::Sleep(1);
  }
}

}  // namespace

std::string error_text(int error) { return std::error_code(error, std::generic_category()).message(); }

bool is_disk_full(int error) noexcept { return error == ENOSPC; }

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
    if (handle_ != kNone) close_handle(handle_of(handle_));
    handle_ = other.handle_;
    other.handle_ = kNone;
  }
  return *this;
}

File::~File() {
  if (handle_ != kNone) close_handle(handle_of(handle_));
}

std::size_t File::read_at(void* out, std::size_t n, std::uint64_t offset) const noexcept {
  auto* p = static_cast<unsigned char*>(out);
  std::size_t done = 0;
  while (done < n) {
    OVERLAPPED at{};
    const std::uint64_t o = offset + done;
    at.Offset = static_cast<DWORD>(o);
    at.OffsetHigh = static_cast<DWORD>(o >> 32);
    const DWORD want = static_cast<DWORD>(std::min<std::size_t>(n - done, 1u << 30));
    DWORD got = 0;
    if (!::ReadFile(handle_of(handle_), p + done, want, &got, &at)) {
      errno = last_errno();  // the callers' messages read errno, as on POSIX
      break;
    }
    if (got == 0) break;
    done += got;
  }
  return done;
}

int File::write_all(const void* data, std::size_t n) noexcept {
  const auto* p = static_cast<const unsigned char*>(data);
  while (n > 0) {
    const DWORD want = static_cast<DWORD>(std::min<std::size_t>(n, 1u << 30));
    DWORD put = 0;
    if (!::WriteFile(handle_of(handle_), p, want, &put, nullptr)) return last_errno();
    p += put;
    n -= put;
  }
  return 0;
}

int File::status(FileStatus& st) const noexcept { return status_of_handle(handle_of(handle_), st); }

void File::touch() noexcept {
  FILETIME now;
  ::GetSystemTimeAsFileTime(&now);
  ::SetFileTime(handle_of(handle_), nullptr, nullptr, &now);
}

void File::share_read() noexcept {}  // the folder's inherited ACL decides who reads

int File::sync() noexcept { return ::FlushFileBuffers(handle_of(handle_)) ? 0 : last_errno(); }

int File::take_attributes_of(const FileStatus&) noexcept { return 0; }  // ACLs are inherited from the folder

int File::close() noexcept {
  if (handle_ == kNone) return 0;
  const BOOL ok = ::CloseHandle(handle_of(handle_));
  handle_ = kNone;
  return ok ? 0 : last_errno();
}

// ---- Directory

Directory& Directory::operator=(Directory&& other) noexcept {
  if (this != &other) {
    if (handle_ != kNone) close_handle(handle_of(handle_));
    handle_ = other.handle_;
    other.handle_ = kNone;
  }
  return *this;
}

Directory::~Directory() {
  if (handle_ != kNone) close_handle(handle_of(handle_));
}

Directory Directory::open(const std::filesystem::path& path, int& error) {
  Directory d;
  // Followed when it is a link (no FILE_FLAG_OPEN_REPARSE_POINT): the user chose this path.
  const HANDLE h = ::CreateFileW(path.wstring().c_str(), FILE_LIST_DIRECTORY | FILE_READ_ATTRIBUTES, kShareNoDelete,
                                 nullptr, OPEN_EXISTING, FILE_FLAG_BACKUP_SEMANTICS, nullptr);
  if (h == INVALID_HANDLE_VALUE) {
    error = last_errno();
    return d;
  }
  FileStatus st;
  if ((error = status_of_handle(h, st)) == 0 && st.type != FileType::directory) error = ENOTDIR;
  if (error != 0) {
    close_handle(h);
    return d;
  }
  d.handle_ = from_handle(h);
  return d;
}

Directory Directory::open_sub(const std::string& name, bool create, int& error) const {
  Directory d;
  const std::wstring path = child(handle_, name, error);
  if (path.empty()) return d;
  if (create && !::CreateDirectoryW(path.c_str(), nullptr) && ::GetLastError() != ERROR_ALREADY_EXISTS) {
    error = last_errno();
    return d;
  }
  const HANDLE h = ::CreateFileW(path.c_str(), FILE_LIST_DIRECTORY | FILE_READ_ATTRIBUTES, kShareNoDelete, nullptr,
                                 OPEN_EXISTING, FILE_FLAG_BACKUP_SEMANTICS | FILE_FLAG_OPEN_REPARSE_POINT, nullptr);
  if (h == INVALID_HANDLE_VALUE) {
    error = last_errno();
    return d;
  }
  FileStatus st;
  if ((error = status_of_handle(h, st)) == 0) {
    if (st.type == FileType::symlink)
      error = ELOOP;  // a junction or symlink: never entered
    else if (st.type != FileType::directory)
      error = ENOTDIR;
  }
  if (error != 0) {
    close_handle(h);
    return d;
  }
  d.handle_ = from_handle(h);
  return d;
}

std::vector<std::string> Directory::names(int& error) const {
  std::vector<std::string> names;
  std::wstring pattern = child(handle_, "x", error);
  if (pattern.empty()) return names;
  pattern.back() = L'*';
  WIN32_FIND_DATAW found;
  const HANDLE search = ::FindFirstFileExW(pattern.c_str(), FindExInfoBasic, &found, FindExSearchNameMatch, nullptr, 0);
  if (search == INVALID_HANDLE_VALUE) {
    error = ::GetLastError() == ERROR_FILE_NOT_FOUND ? 0 : last_errno();
    return names;
  }
  do {
    const std::wstring name = found.cFileName;
    if (name != L"." && name != L"..") names.push_back(std::filesystem::path(name).string());
  } while (::FindNextFileW(search, &found));
  error = ::GetLastError() == ERROR_NO_MORE_FILES ? 0 : last_errno();
  ::FindClose(search);
  return names;
}

int Directory::status_of(const std::string& name, FileStatus& st) const noexcept {
  try {
    int error = 0;
    const std::wstring path = child(handle_, name, error);
    if (path.empty()) return error;
    const HANDLE h = open_for_look(path, error);
    if (h == INVALID_HANDLE_VALUE) return error;
    error = status_of_handle(h, st);
    close_handle(h);
    return error;
  } catch (...) {  // a name Windows cannot hold
    return EINVAL;
  }
}

File Directory::open_for_reading(const std::string& name, int& error) const {
  File f;
  const std::wstring path = child(handle_, name, error);
  if (path.empty()) return f;
  // FILE_SHARE_DELETE: another process may evict the entry while it is read, as on POSIX.
  const HANDLE h = ::CreateFileW(path.c_str(), GENERIC_READ | FILE_WRITE_ATTRIBUTES, kShareAll, nullptr, OPEN_EXISTING,
                                 FILE_FLAG_OPEN_REPARSE_POINT, nullptr);
  if (h == INVALID_HANDLE_VALUE) {
    error = last_errno();
    return f;
  }
  FileStatus st;
  if ((error = status_of_handle(h, st)) == 0 && st.type == FileType::symlink) error = ELOOP;
  if (error != 0) {
    close_handle(h);
    return f;
  }
  f.handle_ = from_handle(h);
  return f;
}

File Directory::create_exclusive(const std::string& name, int& error) const {
  File f;
  const std::wstring path = child(handle_, name, error);
  if (path.empty()) return f;
  // CREATE_NEW fails on anything at the name, a link included.
  const HANDLE h = ::CreateFileW(path.c_str(), GENERIC_READ | GENERIC_WRITE, kShareAll, nullptr, CREATE_NEW,
                                 FILE_ATTRIBUTE_NORMAL | FILE_FLAG_OPEN_REPARSE_POINT, nullptr);
  error = h == INVALID_HANDLE_VALUE ? last_errno() : 0;
  if (h != INVALID_HANDLE_VALUE) f.handle_ = from_handle(h);
  return f;
}

int Directory::rename(const std::string& from, const std::string& to) const noexcept {
  try {
    int error = 0;
    const std::wstring a = child(handle_, from, error);
    const std::wstring b = a.empty() ? std::wstring() : child(handle_, to, error);
    if (b.empty()) return error;
    return move_replacing(a, b);
  } catch (...) {
    return EINVAL;
  }
}

int Directory::remove(const std::string& name) const noexcept {
  try {
    int error = 0;
    const std::wstring path = child(handle_, name, error);
    if (path.empty()) return error;
    return ::DeleteFileW(path.c_str()) ? 0 : last_errno();  // a link is removed itself; never a folder
  } catch (...) {
    return EINVAL;
  }
}

// ---- paths

int status_no_follow(const std::filesystem::path& path, FileStatus& st) noexcept {
  try {
    int error = 0;
    const HANDLE h = open_for_look(path.wstring(), error);
    if (h == INVALID_HANDLE_VALUE) return error;
    error = status_of_handle(h, st);
    close_handle(h);
    return error;
  } catch (...) {
    return EINVAL;
  }
}

File create_new_file(const std::filesystem::path& path, int& error) {
  File f;
  const HANDLE h = ::CreateFileW(path.wstring().c_str(), GENERIC_WRITE, kShareAll, nullptr, CREATE_NEW,
                                 FILE_ATTRIBUTE_NORMAL | FILE_FLAG_OPEN_REPARSE_POINT, nullptr);
  error = h == INVALID_HANDLE_VALUE ? last_errno() : 0;
  if (h != INVALID_HANDLE_VALUE) f.handle_ = from_handle(h);
  return f;
}

File open_file_for_reading(const std::filesystem::path& path, int& error) {
  File f;
  const HANDLE h = ::CreateFileW(path.wstring().c_str(), GENERIC_READ, kShareAll, nullptr, OPEN_EXISTING,
                                 FILE_ATTRIBUTE_NORMAL, nullptr);
  error = h == INVALID_HANDLE_VALUE ? last_errno() : 0;
  if (h != INVALID_HANDLE_VALUE) f.handle_ = from_handle(h);
  return f;
}

int rename_replacing(const std::filesystem::path& from, const std::filesystem::path& to) noexcept {
  try {
    return move_replacing(from.wstring(), to.wstring());
  } catch (...) {
    return EINVAL;
  }
}

int remove_file(const std::filesystem::path& path) noexcept {
  try {
    return ::DeleteFileW(path.wstring().c_str()) ? 0 : last_errno();
  } catch (...) {
    return EINVAL;
  }
}

}  // namespace vgpu::platform
