// SPDX-License-Identifier: Apache-2.0
// cache/src/disk_store_fs.hpp — the file-system primitives of the L2 store, which treats its
// directory as untrusted input (docs/cache-format.md, "The directory is untrusted input"):
// folders below the user's directory are opened without following a link and everything else
// works relative to them (vgpu/platform/files.hpp: openat and friends on POSIX, handles on
// Windows), so no link below the user's directory is ever followed; entry files are opened
// only when a no-follow look says they are regular files, and then without blocking, so no
// FIFO or device can block a caller. Internal to cache/src; every function is thread-safe.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "disk_store_format.hpp"
#include "vgpu/platform/files.hpp"

namespace vgpu::cache::detail {

using platform::error_text;

/// What opening a folder found.
enum class DirState {
  ok,        ///< opened: fd is valid
  absent,    ///< nothing by that name (or a parent is absent)
  unusable,  ///< something else is there (a symlink, a file), or it cannot be opened
};

/// A folder opened for one operation, or why not.
struct OpenedDir {
  platform::Directory dir;
  DirState state = DirState::absent;
  std::filesystem::path path;  ///< for messages
  std::string problem;         ///< when unusable: what is there ("a symlink, not a directory") or the error text
  std::string fix;             ///< when unusable: what the user can do, a sentence without "Fix: "
};

/// Opens the user-chosen directory itself; a symlink there is followed (the user picked the
/// path, e.g. a ~/.cache that links elsewhere). create: make it and its parents when missing.
OpenedDir open_base_dir(const std::filesystem::path& dir, bool create);

/// Opens the folder name inside parent (open as parent_path/name) without following a
/// link; anything but a directory there makes it unusable. create: make it (0755) first when
/// missing.
OpenedDir open_sub_dir(const OpenedDir& parent, const std::string& name, bool create);

/// Opens name in dir for reading only when it is a regular file: a no-follow look first (a
/// FIFO, device, socket, directory or link is never opened), then an open that neither
/// follows, blocks nor takes a terminal, and a look at the opened file, which must show the
/// same regular file. On success st holds that look. Otherwise returns no file and either sets
/// problem ("type": what is there instead; "unreadable": the open failed) or, when nothing is
/// there (ENOENT), leaves problem empty.
platform::File open_regular_at(const platform::Directory& dir, const std::string& name, platform::FileStatus& st,
                               Problem& problem);

/// Returns the Problem ("type") for a non-regular file of this type.
Problem type_problem(platform::FileType type);

/// Creates a new file named prefix + 6 random [A-Za-z0-9] in dir (exclusive, never following,
/// mode 0600), as mkostemp does but relative to a folder; sets name. Returns no file (error
/// set to its errno) when it cannot.
platform::File make_temp_at(const platform::Directory& dir, const std::string& prefix, std::string& name, int& error);

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
