// SPDX-License-Identifier: Apache-2.0
// vgpu/platform/gl_window.hpp — a hidden window whose device context has an OpenGL pixel
// format: what WGL needs before it makes any context, even one that never draws. Windows only
// (the OpenGL backend's gl_wgl.cpp); EGL needs no window. Part of the platform layer: the only
// code of vgpu that calls the OS (docs/platforms.md). Internal to vgpu (not installed).
//
// Thread-safety: a window belongs to the thread that created it: create it, use its device
// context and destroy it on one thread (a device's worker). Movable, not copyable.
#pragma once

#include <string>

namespace vgpu::platform {

/// A never-shown window of its own window class, with a double-buffered RGBA pixel format set
/// on its device context; destroyed with the object.
class GlWindow {
 public:
  GlWindow() = default;
  /// Creates the window and sets the pixel format; on failure returns an empty window and sets
  /// *reason to what failed and the OS's reason. Elsewhere than Windows always empty.
  static GlWindow create(std::string* reason);
  GlWindow(GlWindow&& other) noexcept : window_(other.window_), dc_(other.dc_) {
    other.window_ = nullptr;
    other.dc_ = nullptr;
  }
  GlWindow& operator=(GlWindow&& other) noexcept;
  GlWindow(const GlWindow&) = delete;
  GlWindow& operator=(const GlWindow&) = delete;
  ~GlWindow();

  /// Returns the window's device context (an HDC) for wglCreateContext/wglMakeCurrent.
  void* device_context() const noexcept { return dc_; }
  /// Returns whether a window exists.
  explicit operator bool() const noexcept { return dc_ != nullptr; }

 private:
  void release() noexcept;
  void* window_ = nullptr;  // HWND
  void* dc_ = nullptr;      // HDC, owned by the window's class (CS_OWNDC)
};

/// Returns the calling thread's last OS error as text (GetLastError on Windows, errno
/// elsewhere), for messages about calls that report failure that way (WGL's).
std::string last_os_error_text();

}  // namespace vgpu::platform
