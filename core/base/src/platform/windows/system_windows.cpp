// SPDX-License-Identifier: Apache-2.0
// core/base/src/platform/windows/system_windows.cpp — memory size and the per-user cache folder
// on Windows.
#include <windows.h>

#include <cstdlib>

#include "vgpu/platform/system_info.hpp"

namespace vgpu::platform {

bool enable_amx_tiles() noexcept {
  // Windows 11 manages tile state itself once XCR0 has it (cpu_features() checks that).
  return cpu_features().x86_amx_tile;
}

std::uint64_t physical_memory_bytes() noexcept {
  MEMORYSTATUSEX status{};
  status.dwLength = sizeof status;
  return ::GlobalMemoryStatusEx(&status) ? static_cast<std::uint64_t>(status.ullTotalPhys) : 0;
}

std::filesystem::path user_cache_root() {
  // %LOCALAPPDATA% (not roaming: a kernel cache is per machine), else the profile's AppData\Local.
  if (const wchar_t* v = ::_wgetenv(L"LOCALAPPDATA"); v != nullptr && *v != L'\0') return v;
  if (const wchar_t* v = ::_wgetenv(L"USERPROFILE"); v != nullptr && *v != L'\0')
    return std::filesystem::path(v) / "AppData" / "Local";
  return {};
}

}  // namespace vgpu::platform
