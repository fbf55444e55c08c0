// SPDX-License-Identifier: Apache-2.0
// core/base/src/platform/windows/process_windows.cpp — process and thread facts on Windows.
#include <io.h>
#include <windows.h>
#if defined(__MINGW32__)
#include <pthread.h>
#endif

#include <string>

#include "vgpu/platform/process.hpp"

namespace vgpu::platform {

long process_id() noexcept { return static_cast<long>(::GetCurrentProcessId()); }

bool on_initial_thread() noexcept { return false; }  // Windows names no initial thread

void set_thread_name(std::thread& t, std::string_view name) noexcept {
  // SetThreadDescription exists from Windows 10 1607; looked up so older systems still run.
  using SetDescription = HRESULT(WINAPI*)(HANDLE, PCWSTR);
  static const auto set = reinterpret_cast<SetDescription>(
      reinterpret_cast<void*>(::GetProcAddress(::GetModuleHandleW(L"kernel32.dll"), "SetThreadDescription")));
  if (set == nullptr) return;
  const std::wstring wide(name.begin(), name.end());  // vgpu's thread names are ASCII
#if defined(__MINGW32__)
  // MinGW's std::thread runs on winpthreads: its native handle is a pthread_t.
  const HANDLE h = pthread_gethandle(t.native_handle());
#else
  const HANDLE h = static_cast<HANDLE>(t.native_handle());
#endif
  set(h, wide.c_str());
}

bool is_terminal(std::FILE* stream) noexcept { return ::_isatty(::_fileno(stream)) != 0; }

}  // namespace vgpu::platform
