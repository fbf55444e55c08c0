// SPDX-License-Identifier: Apache-2.0
// core/base/src/platform/posix/gl_window_posix.cpp — no WGL window off Windows (EGL makes
// contexts without one); errno's text for last_os_error_text().
#include <cerrno>
#include <cstring>

#include "vgpu/platform/gl_window.hpp"

namespace vgpu::platform {

GlWindow GlWindow::create(std::string* reason) {
  *reason = "WGL's hidden windows exist on Windows only (OpenGL goes through EGL here)";
  return GlWindow{};
}

GlWindow& GlWindow::operator=(GlWindow&& other) noexcept {
  window_ = other.window_;
  dc_ = other.dc_;
  other.window_ = nullptr;
  other.dc_ = nullptr;
  return *this;
}

GlWindow::~GlWindow() { release(); }

void GlWindow::release() noexcept {
  window_ = nullptr;
  dc_ = nullptr;
}

std::string last_os_error_text() { return std::strerror(errno); }

}  // namespace vgpu::platform
