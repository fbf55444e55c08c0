// SPDX-License-Identifier: Apache-2.0
// tests/support/fs_links.hpp — links for the hostile-directory tests, on every OS: a symlink on
// POSIX; on Windows a symbolic link where the OS lets this user make one (developer mode or
// the privilege), else for folders a junction (a mount-point reparse point, which any user may
// make). vgpu's store treats every reparse point as a link (docs/platforms.md), so either
// serves. std::filesystem is not used for this: MinGW's libstdc++ neither makes nor recognises
// links on Windows. Each maker returns "" or why it could not, for the test to report a skip.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <system_error>

#if defined(_WIN32)
#include <windows.h>
#include <winioctl.h>

#include <cstring>
#include <vector>
#endif

namespace vgpu_test {

#if defined(_WIN32)
namespace links_detail {

/// The text of Windows error code (FormatMessageA), with the code.
inline std::string error_text(DWORD code) {
  char buf[512] = {};
  const DWORD n = FormatMessageA(FORMAT_MESSAGE_FROM_SYSTEM | FORMAT_MESSAGE_IGNORE_INSERTS, nullptr, code, 0, buf,
                                 sizeof buf, nullptr);
  std::string text(buf, n);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == '.')) text.pop_back();
  return text + " (Windows error " + std::to_string(code) + ")";
}

/// Makes the empty folder at into a junction to target (FSCTL_SET_REPARSE_POINT with a
/// mount-point buffer, laid out as in ntifs.h's REPARSE_DATA_BUFFER, which MinGW's headers
/// lack). Returns "" or why not.
inline std::string make_junction(const std::filesystem::path& target, const std::filesystem::path& at) {
  std::error_code ec;
  const std::wstring substitute = L"\\??\\" + std::filesystem::absolute(target, ec).wstring();
  const std::wstring print = std::filesystem::absolute(target, ec).wstring();
  if (!CreateDirectoryW(at.c_str(), nullptr)) return "CreateDirectoryW: " + error_text(GetLastError());
  const HANDLE h = CreateFileW(at.c_str(), GENERIC_WRITE, 0, nullptr, OPEN_EXISTING,
                               FILE_FLAG_BACKUP_SEMANTICS | FILE_FLAG_OPEN_REPARSE_POINT, nullptr);
  if (h == INVALID_HANDLE_VALUE) {
    const DWORD code = GetLastError();
    RemoveDirectoryW(at.c_str());
    return "CreateFileW: " + error_text(code);
  }
  // Header: tag (4), data length (2), reserved (2); mount point: substitute offset and length,
  // print offset and length (2 each), then both names, each NUL-terminated.
  const std::size_t sub_bytes = substitute.size() * sizeof(wchar_t), print_bytes = print.size() * sizeof(wchar_t);
  const std::size_t path_bytes = sub_bytes + sizeof(wchar_t) + print_bytes + sizeof(wchar_t);
  std::vector<unsigned char> buf(8 + 8 + path_bytes, 0);
  const auto put16 = [&](std::size_t at_byte, std::size_t v) {
    const auto w = static_cast<std::uint16_t>(v);
    std::memcpy(buf.data() + at_byte, &w, 2);
  };
  const DWORD tag = IO_REPARSE_TAG_MOUNT_POINT;
  std::memcpy(buf.data(), &tag, 4);
  put16(4, 8 + path_bytes);
  put16(8, 0);
  put16(10, sub_bytes);
  put16(12, sub_bytes + sizeof(wchar_t));
  put16(14, print_bytes);
  std::memcpy(buf.data() + 16, substitute.data(), sub_bytes);
  std::memcpy(buf.data() + 16 + sub_bytes + sizeof(wchar_t), print.data(), print_bytes);
  DWORD returned = 0;
  const BOOL ok = DeviceIoControl(h, FSCTL_SET_REPARSE_POINT, buf.data(), static_cast<DWORD>(buf.size()), nullptr, 0,
                                  &returned, nullptr);
  const DWORD code = GetLastError();
  CloseHandle(h);
  if (!ok) {
    RemoveDirectoryW(at.c_str());
    return "FSCTL_SET_REPARSE_POINT: " + error_text(code);
  }
  return "";
}

}  // namespace links_detail
#endif

/// Returns whether path is a link as itself: a symlink on POSIX, any reparse point on Windows.
inline bool is_link(const std::filesystem::path& path) {
#if defined(_WIN32)
  const DWORD attributes = GetFileAttributesW(path.c_str());
  return attributes != INVALID_FILE_ATTRIBUTES && (attributes & FILE_ATTRIBUTE_REPARSE_POINT) != 0;
#else
  std::error_code ec;
  return std::filesystem::is_symlink(std::filesystem::symlink_status(path, ec));
#endif
}

/// Makes a link at at to the folder target. Returns "" or why it could not.
inline std::string make_folder_link(const std::filesystem::path& target, const std::filesystem::path& at) {
#if defined(_WIN32)
  std::string symlink_why;
  if (!CreateSymbolicLinkW(at.c_str(), target.c_str(),
                           SYMBOLIC_LINK_FLAG_DIRECTORY | SYMBOLIC_LINK_FLAG_ALLOW_UNPRIVILEGED_CREATE))
    symlink_why = "CreateSymbolicLinkW: " + links_detail::error_text(GetLastError());
  else if (is_link(at))
    return "";
  else  // Wine 8 reports success and makes nothing
    symlink_why = "CreateSymbolicLinkW reported success, yet no reparse point is there";
  std::string junction_why = links_detail::make_junction(target, at);
  if (junction_why.empty() && !is_link(at)) junction_why = "FSCTL_SET_REPARSE_POINT made no reparse point";
  return junction_why.empty() ? "" : symlink_why + "; a junction instead: " + junction_why;
#else
  std::error_code ec;
  std::filesystem::create_directory_symlink(target, at, ec);
  return ec ? "symlink: " + ec.message() : "";
#endif
}

/// Makes a link at at to the file target (on Windows a file symbolic link: a junction cannot
/// point at a file). Returns "" or why it could not.
inline std::string make_file_link(const std::filesystem::path& target, const std::filesystem::path& at) {
#if defined(_WIN32)
  if (!CreateSymbolicLinkW(at.c_str(), target.c_str(), SYMBOLIC_LINK_FLAG_ALLOW_UNPRIVILEGED_CREATE))
    return "CreateSymbolicLinkW: " + links_detail::error_text(GetLastError());
  return is_link(at) ? "" : "CreateSymbolicLinkW reported success, yet no reparse point is there";
#else
  std::error_code ec;
  std::filesystem::create_symlink(target, at, ec);
  return ec ? "symlink: " + ec.message() : "";
#endif
}

/// Returns whether path exists as itself (a link counts; its target is not looked at).
inline bool present(const std::filesystem::path& path) {
  std::error_code ec;
  return is_link(path) || std::filesystem::exists(std::filesystem::symlink_status(path, ec));
}

}  // namespace vgpu_test
