// SPDX-License-Identifier: Apache-2.0
// vgpu/platform/dynamic_library.hpp — shared libraries loaded at run time (dlopen on POSIX,
// LoadLibrary on Windows) and the file names each OS gives the vendor runtimes vgpu loads, so
// that one binary runs anywhere and says what is missing. Part of the platform layer: the only
// code of vgpu that calls the OS (docs/platforms.md). Internal to vgpu (not installed).
//
// Thread-safety: the free functions are thread-safe; a DynamicLibrary object is not shared
// between threads while it is moved or destroyed, symbol() may be called from any thread.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace vgpu::platform {

/// One loaded shared library, unloaded when it goes out of scope unless keep_loaded() was
/// called. Movable, not copyable.
class DynamicLibrary {
 public:
  DynamicLibrary() = default;
  /// Loads name (a bare file name, which the OS's library search finds, or a path) with its
  /// symbols kept to itself; on failure returns an empty library and sets *error (when given)
  /// to the OS's reason.
  static DynamicLibrary load(const std::string& name, std::string* error);
  DynamicLibrary(DynamicLibrary&& other) noexcept : handle_(other.handle_), kept_(other.kept_) {
    other.handle_ = nullptr;
  }
  DynamicLibrary& operator=(DynamicLibrary&& other) noexcept;
  DynamicLibrary(const DynamicLibrary&) = delete;
  DynamicLibrary& operator=(const DynamicLibrary&) = delete;
  ~DynamicLibrary();

  /// Returns the address of the exported symbol name, or null when the library has none.
  void* symbol(const char* name) const noexcept;
  /// Returns whether a library is loaded.
  explicit operator bool() const noexcept { return handle_ != nullptr; }
  /// Keeps the library loaded for the rest of the process, whatever becomes of this object
  /// (drivers keep threads and callbacks in theirs); symbol() still works.
  void keep_loaded() noexcept { kept_ = true; }

 private:
  void* handle_ = nullptr;  // dlopen's handle or an HMODULE
  bool kept_ = false;       // never unloaded
};

/// A vendor runtime vgpu loads at run time.
enum class Runtime {
  vulkan_loader,  ///< the Khronos Vulkan loader
  cuda_driver,    ///< NVIDIA's driver API (libcuda / nvcuda)
  nvrtc,          ///< NVIDIA's run-time compiler
  egl,            ///< EGL, through which the OpenGL backend makes its contexts on Linux
  wgl,            ///< opengl32.dll (WGL and the driver's ICD), the OpenGL backend's on Windows
  nvtx,           ///< NVIDIA Tools Extension, for ranges Nsight shows
};

/// Returns the file names (or paths) of runtime r on this OS, most wanted first; cuda_home
/// (CUDA_HOME, may be empty) adds the toolkit's folder for NVRTC.
std::vector<std::string> runtime_library_names(Runtime r, const std::string& cuda_home = {});

/// Returns the file name this OS gives a shared library called base: libbase.so (Linux),
/// libbase.dylib (macOS), base.dll (Windows).
std::string shared_library_file_name(std::string_view base);

/// Returns the folder of the binary (shared library or program) this function is linked into,
/// or an empty path when the OS will not say.
std::filesystem::path own_module_folder();

/// Returns how many shared libraries the process has loaded so far, a count that only grows
/// (glibc's dl_iterate_phdr dlpi_adds), so that a change says "a library was loaded since";
/// 0 where the loader does not say (Windows, macOS, other C libraries).
unsigned long long loaded_library_count() noexcept;

}  // namespace vgpu::platform
