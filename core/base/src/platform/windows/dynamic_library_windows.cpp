// SPDX-License-Identifier: Apache-2.0
// core/base/src/platform/windows/dynamic_library_windows.cpp — LoadLibrary/GetProcAddress and the
// vendor runtimes' DLL names on Windows.
#include <windows.h>

#include <cstdlib>

#include "vgpu/platform/dynamic_library.hpp"
#include "windows_error.hpp"

namespace vgpu::platform {
using detail::message_of;

DynamicLibrary DynamicLibrary::load(const std::string& name, std::string* error) {
  DynamicLibrary lib;
  const std::filesystem::path p(name);
  // A path: its own folder is searched for its dependencies too (LOAD_WITH_ALTERED_SEARCH_PATH).
  const DWORD flags = p.has_parent_path() ? LOAD_WITH_ALTERED_SEARCH_PATH : 0;
  lib.handle_ = reinterpret_cast<void*>(::LoadLibraryExW(p.wstring().c_str(), nullptr, flags));
  if (lib.handle_ == nullptr && error != nullptr) *error = name + ": " + message_of(::GetLastError());
  return lib;
}

DynamicLibrary& DynamicLibrary::operator=(DynamicLibrary&& other) noexcept {
  if (this != &other) {
    if (handle_ != nullptr && !kept_) ::FreeLibrary(static_cast<HMODULE>(handle_));
    handle_ = other.handle_;
    kept_ = other.kept_;
    other.handle_ = nullptr;
  }
  return *this;
}

DynamicLibrary::~DynamicLibrary() {
  if (handle_ != nullptr && !kept_) ::FreeLibrary(static_cast<HMODULE>(handle_));
}

void* DynamicLibrary::symbol(const char* name) const noexcept {
  return handle_ != nullptr ? reinterpret_cast<void*>(::GetProcAddress(static_cast<HMODULE>(handle_), name)) : nullptr;
}

std::vector<std::string> runtime_library_names(Runtime r, const std::string& cuda_home) {
  switch (r) {
    case Runtime::vulkan_loader:
      return {"vulkan-1.dll"};
    case Runtime::cuda_driver:
      return {"nvcuda.dll"};
    case Runtime::egl:
      return {"libEGL.dll"};  // ANGLE's, where an app ships it; OpenGL on Windows is WGL's otherwise
    case Runtime::wgl:
      return {"opengl32.dll"};
    case Runtime::nvtx:
      return {"nvToolsExt64_1.dll"};
    case Runtime::nvrtc: {
      std::vector<std::string> names = {"nvrtc64_130_0.dll", "nvrtc64_120_0.dll"};
      // The toolkit's installer sets CUDA_PATH; CUDA_HOME as on Linux.
      std::string home = cuda_home;
      if (home.empty())
        if (const char* p = std::getenv("CUDA_PATH"); p != nullptr) home = p;
      if (!home.empty()) {
        names.push_back(home + "\\bin\\nvrtc64_130_0.dll");
        names.push_back(home + "\\bin\\x64\\nvrtc64_130_0.dll");
        names.push_back(home + "\\bin\\nvrtc64_120_0.dll");
      }
      return names;
    }
  }
  return {};
}

std::string shared_library_file_name(std::string_view base) {
#if defined(__MINGW32__)
  return "lib" + std::string(base) + ".dll";  // CMake's prefix for MinGW's shared libraries
#else
  return std::string(base) + ".dll";
#endif
}

std::filesystem::path own_module_folder() {
  HMODULE self = nullptr;
  if (!::GetModuleHandleExW(GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS | GET_MODULE_HANDLE_EX_FLAG_UNCHANGED_REFCOUNT,
                            reinterpret_cast<LPCWSTR>(&own_module_folder), &self))
    return {};
  std::wstring buffer(MAX_PATH, L'\0');
  for (;;) {
    const DWORD n = ::GetModuleFileNameW(self, buffer.data(), static_cast<DWORD>(buffer.size()));
    if (n == 0) return {};
    if (n < buffer.size()) {
      buffer.resize(n);
      return std::filesystem::path(buffer).parent_path();
    }
    buffer.resize(buffer.size() * 2);
  }
}

// The Windows loader keeps no such count (and a DLL's atexit handlers run when that DLL
// unloads, not in the process's list, so no order needs restoring after a load).
unsigned long long loaded_library_count() noexcept { return 0; }

}  // namespace vgpu::platform
