// SPDX-License-Identifier: Apache-2.0
// backends/opengl/gl_context.hpp — the window-system side of the OpenGL backend: finding the
// places a GL core context can be made and making, binding and destroying contexts there.
// One implementation per window system: EGL (gl_egl.cpp: headless displays, Linux) and WGL
// (gl_wgl.cpp: a hidden window per context, Windows); the rest of the backend sees only this.
//
// Thread-safety: load_context_api() and the source functions run once per process during
// discovery; a context is created, made current and destroyed on one thread (a device's worker).
#pragma once

#include <string>
#include <vector>

#include "gl_api.hpp"

namespace vgpu::opengl {

/// One place a context can be made: an initialised EGL display, or WGL's pixel format on a
/// hidden window. EGL displays stay initialised for the life of the process (eglTerminate
/// would pull contexts from under other runtimes' devices, since EGL hands every caller the
/// same display for the same device).
struct GlContextSource {
  void* display = nullptr;  ///< the EGLDisplay; null on WGL (each context brings its window)
  std::string feature;      ///< the DeviceInfo feature naming it: "egl_device", "egl_surfaceless", "wgl"
  std::string label;        ///< for messages: "EGL device 0 (/dev/dri/renderD128)"
  std::string node;         ///< DRM device file or render node, when the driver names one
  bool software = false;    ///< the window system says it is a software renderer
};

/// A created context and what it is bound with (WGL: its hidden window and device context).
struct GlContext {
  void* context = nullptr;  ///< EGLContext or HGLRC
  void* window = nullptr;   ///< WGL: the platform::GlWindow holding the device context
  void* surface = nullptr;  ///< WGL: the window's HDC; null on EGL (surfaceless)
  /// Returns whether a context exists.
  explicit operator bool() const noexcept { return context != nullptr; }
};

/// Returns the window system's name for messages: "EGL" or "WGL".
const char* window_system_name();

/// Loads the window system's library (libEGL, opengl32.dll) and its display-less entry
/// points; false with *reason when it or what vgpu needs of it is missing. Once per process.
bool load_context_api(std::string* reason);

/// Returns the sources to try first (EGL: one per enumerated device; WGL: the desktop's
/// driver); those that fail to initialise are described in *problems ("; "-separated).
std::vector<GlContextSource> primary_sources(std::string* problems);

/// Returns the sources to try when no primary one gave a device (EGL: Mesa's surfaceless
/// display; WGL: none); failures are described in *problems.
std::vector<GlContextSource> fallback_sources(std::string* problems);

/// Returns why src cannot host the headless compute context vgpu makes ("" when it can).
std::string missing_source_features(const GlContextSource& src);

/// Creates a GL core context on src for the calling thread's use. With *major == 0 it tries
/// 4.6, 4.5 and 4.3 in turn; otherwise exactly *major.*minor. Asks for GPU-reset notification
/// where the window system offers it, else a plain context; *reset_notification says which it
/// got. Sets *major/*minor to what it created; returns an empty context with *reason.
GlContext create_context(const GlContextSource& src, int* major, int* minor, bool* reset_notification,
                         std::string* reason);

/// Makes ctx current on this thread (without surfaces on EGL); false with *reason on failure,
/// and *context_lost (when given) set when the window system said the context was lost.
bool make_current(const GlContextSource& src, const GlContext& ctx, std::string* reason, bool* context_lost = nullptr);

/// Releases and destroys ctx (made current on this thread), and this thread's window-system
/// state; ctx is empty afterwards.
void destroy_context(const GlContextSource& src, GlContext& ctx);

/// Releases this thread's window-system state without destroying a context (one still
/// running work is left to the driver).
void release_thread();

/// Returns the address of GL entry point name for the context current on this thread (null
/// when the driver has none): glad's loader callback.
GLADapiproc gl_proc_address(const char* name);

}  // namespace vgpu::opengl
