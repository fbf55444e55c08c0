// SPDX-License-Identifier: Apache-2.0
// core/base/src/platform/windows/gl_window_windows.cpp — the hidden window WGL makes its
// contexts on: one window class of vgpu's own (CS_OWNDC, so the device context lives as long as
// the window), a plain window that is never shown, a pixel format set once.
#include <windows.h>

#include <mutex>

#include "vgpu/platform/gl_window.hpp"
#include "windows_error.hpp"

namespace vgpu::platform {
namespace {

constexpr wchar_t kClassName[] = L"vgpu-gl-window";

// Returns the module (DLL or program) this code is linked into: the class is registered for it.
HINSTANCE own_instance() {
  HMODULE module = nullptr;
  ::GetModuleHandleExW(GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS | GET_MODULE_HANDLE_EX_FLAG_UNCHANGED_REFCOUNT,
                       reinterpret_cast<LPCWSTR>(&own_instance), &module);
  return module;
}

// Registers the window class once per process; "" or why not. The class stays registered
// (windows of it may live on other threads) until the process ends.
std::string register_class() {
  static std::once_flag once;
  static std::string problem;
  std::call_once(once, [] {
    WNDCLASSEXW wc{};
    wc.cbSize = sizeof wc;
    wc.style = CS_OWNDC;  // one device context per window, kept while it lives (WGL's requirement)
    wc.lpfnWndProc = ::DefWindowProcW;
    wc.hInstance = own_instance();
    wc.lpszClassName = kClassName;
    if (::RegisterClassExW(&wc) == 0 && ::GetLastError() != ERROR_CLASS_ALREADY_EXISTS)
      problem = "RegisterClassExW failed: " + detail::message_of(::GetLastError());
  });
  return problem;
}

}  // namespace

GlWindow GlWindow::create(std::string* reason) {
  GlWindow w;
  if (std::string problem = register_class(); !problem.empty()) {
    *reason = problem;
    return w;
  }
  // Never shown: WGL needs a window's device context with a pixel format, nothing drawn on it.
  w.window_ = ::CreateWindowExW(0, kClassName, L"vgpu", WS_OVERLAPPEDWINDOW | WS_CLIPSIBLINGS | WS_CLIPCHILDREN, 0, 0,
                                16, 16, nullptr, nullptr, own_instance(), nullptr);
  if (w.window_ == nullptr) {
    const DWORD code = ::GetLastError();
    // Wine without an X display fails here and sets no error code ("Success" would mislead).
    *reason = code != 0 ? "CreateWindowExW failed: " + detail::message_of(code)
                        : "CreateWindowExW failed without an error code (under Wine: no X display; run under "
                          "xvfb-run or set DISPLAY)";
    return w;
  }
  const HDC dc = ::GetDC(static_cast<HWND>(w.window_));
  if (dc == nullptr) {
    *reason = "GetDC of the hidden window failed: " + detail::message_of(::GetLastError());
    w.release();
    return w;
  }
  PIXELFORMATDESCRIPTOR pfd{};
  pfd.nSize = sizeof pfd;
  pfd.nVersion = 1;
  pfd.dwFlags = PFD_DRAW_TO_WINDOW | PFD_SUPPORT_OPENGL | PFD_DOUBLEBUFFER;
  pfd.iPixelType = PFD_TYPE_RGBA;
  pfd.cColorBits = 32;
  pfd.cDepthBits = 0;
  pfd.iLayerType = PFD_MAIN_PLANE;
  const int format = ::ChoosePixelFormat(dc, &pfd);
  if (format == 0 || !::SetPixelFormat(dc, format, &pfd)) {
    *reason = std::string(format == 0 ? "ChoosePixelFormat" : "SetPixelFormat") +
              " found no OpenGL pixel format: " + detail::message_of(::GetLastError());
    w.release();
    return w;
  }
  w.dc_ = dc;
  return w;
}

GlWindow& GlWindow::operator=(GlWindow&& other) noexcept {
  if (this != &other) {
    release();
    window_ = other.window_;
    dc_ = other.dc_;
    other.window_ = nullptr;
    other.dc_ = nullptr;
  }
  return *this;
}

GlWindow::~GlWindow() { release(); }

void GlWindow::release() noexcept {
  // CS_OWNDC: the device context goes with the window (ReleaseDC would be a no-op).
  if (window_ != nullptr) ::DestroyWindow(static_cast<HWND>(window_));
  window_ = nullptr;
  dc_ = nullptr;
}

std::string last_os_error_text() { return detail::message_of(::GetLastError()); }

}  // namespace vgpu::platform
