// SPDX-License-Identifier: Apache-2.0
// core/base/src/platform/posix/system_posix.cpp — memory size and the per-user cache folder on
// Linux and macOS.
#include <pwd.h>
#include <unistd.h>
#if defined(__linux__)
#include <sys/syscall.h>
#endif

#include <cstdlib>

#include "vgpu/platform/system_info.hpp"

namespace vgpu::platform {
namespace {

/// Returns the user's home folder: $HOME, else the password database's entry.
std::filesystem::path home_folder() {
  if (const char* h = std::getenv("HOME"); h != nullptr && *h != '\0') return h;
  passwd pw{};
  passwd* found = nullptr;
  char buf[4096];
  if (::getpwuid_r(::getuid(), &pw, buf, sizeof buf, &found) == 0 && found && found->pw_dir && *found->pw_dir)
    return found->pw_dir;
  return {};
}

}  // namespace

bool enable_amx_tiles() noexcept {
  static const bool enabled = [] {
    if (!cpu_features().x86_amx_tile) return false;
#if defined(__linux__) && defined(__x86_64__) && defined(SYS_arch_prctl)
    // Linux 5.16+ enables tile data per process on request (XFD traps a use without it).
    constexpr long kReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
    return ::syscall(SYS_arch_prctl, kReqXcompPerm, kXfeatureXtiledata) == 0;
#else
    return false;  // macOS has no AMX CPUs
#endif
  }();
  return enabled;
}

std::uint64_t physical_memory_bytes() noexcept {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page) : 0;
}

std::filesystem::path user_cache_root() {
#if defined(__APPLE__)
  const std::filesystem::path home = home_folder();
  return home.empty() ? home : home / "Library" / "Caches";
#else
  // XDG: only an absolute $XDG_CACHE_HOME counts (the specification ignores a relative one).
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x != nullptr && x[0] == '/') return x;
  const std::filesystem::path home = home_folder();
  return home.empty() ? home : home / ".cache";
#endif
}

}  // namespace vgpu::platform
