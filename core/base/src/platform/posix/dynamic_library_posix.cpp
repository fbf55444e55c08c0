// SPDX-License-Identifier: Apache-2.0
// core/base/src/platform/posix/dynamic_library_posix.cpp — dlopen/dlsym/dladdr and the vendor
// runtimes' file names on Linux and macOS.
#include <dlfcn.h>
#if defined(__GLIBC__)
#include <link.h>
#endif

#include <cstddef>

#include "vgpu/platform/dynamic_library.hpp"

namespace vgpu::platform {

DynamicLibrary DynamicLibrary::load(const std::string& name, std::string* error) {
  DynamicLibrary lib;
  // RTLD_LOCAL: a runtime's (or the SPIR-V toolchain's) symbols stay its own.
  lib.handle_ = ::dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib.handle_ == nullptr && error != nullptr) {
    const char* e = ::dlerror();
    *error = e ? e : name + " could not be loaded";
  }
  return lib;
}

DynamicLibrary& DynamicLibrary::operator=(DynamicLibrary&& other) noexcept {
  if (this != &other) {
    if (handle_ != nullptr && !kept_) ::dlclose(handle_);
    handle_ = other.handle_;
    kept_ = other.kept_;
    other.handle_ = nullptr;
  }
  return *this;
}

DynamicLibrary::~DynamicLibrary() {
  if (handle_ != nullptr && !kept_) ::dlclose(handle_);
}

void* DynamicLibrary::symbol(const char* name) const noexcept {
  return handle_ != nullptr ? ::dlsym(handle_, name) : nullptr;
}

std::vector<std::string> runtime_library_names(Runtime r, const std::string& cuda_home) {
#ifdef __APPLE__
  switch (r) {
    case Runtime::vulkan_loader:
      // The LunarG SDK's loader, then one an app bundles beside itself (MoltenVK behind it).
      return {"libvulkan.1.dylib", "libvulkan.dylib", "/usr/local/lib/libvulkan.1.dylib"};
    case Runtime::egl:
      return {"libEGL.dylib"};  // ANGLE's, if an app ships it; macOS itself has no EGL
    default:
      return {};  // no NVIDIA driver, NVTX or WGL on macOS
  }
#else
  switch (r) {
    case Runtime::vulkan_loader:
      return {"libvulkan.so.1"};
    case Runtime::cuda_driver:
      return {"libcuda.so.1"};
    case Runtime::egl:
      return {"libEGL.so.1", "libEGL.so"};
    case Runtime::wgl:
      return {};  // Windows only
    case Runtime::nvtx:
      return {"libnvToolsExt.so.1", "libnvToolsExt.so"};
    case Runtime::nvrtc: {
      std::vector<std::string> names = {"libnvrtc.so.13", "libnvrtc.so.12", "/usr/local/cuda/lib64/libnvrtc.so.13",
                                        "/usr/local/cuda/lib64/libnvrtc.so.12"};
      if (!cuda_home.empty()) {
        names.push_back(cuda_home + "/lib64/libnvrtc.so.13");
        names.push_back(cuda_home + "/lib64/libnvrtc.so.12");
      }
      return names;
    }
  }
  return {};
#endif
}

std::string shared_library_file_name(std::string_view base) {
#ifdef __APPLE__
  return "lib" + std::string(base) + ".dylib";
#else
  return "lib" + std::string(base) + ".so";
#endif
}

std::filesystem::path own_module_folder() {
  Dl_info info{};
  if (::dladdr(reinterpret_cast<const void*>(&own_module_folder), &info) == 0 || info.dli_fname == nullptr) return {};
  std::error_code ec;
  std::filesystem::path p = std::filesystem::weakly_canonical(info.dli_fname, ec);
  return (ec ? std::filesystem::path(info.dli_fname) : p).parent_path();
}

unsigned long long loaded_library_count() noexcept {
  unsigned long long adds = 0;
#if defined(__GLIBC__)
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t size, void* out) {
        if (size >= offsetof(dl_phdr_info, dlpi_adds) + sizeof info->dlpi_adds)
          *static_cast<unsigned long long*>(out) = info->dlpi_adds;
        return 1;  // the count is the same in every entry: the first one is enough
      },
      &adds);
#endif
  return adds;
}

}  // namespace vgpu::platform
