// SPDX-License-Identifier: Apache-2.0
// backends/opengl/gl_egl.hpp — headless EGL: loading libEGL, finding displays without X or
// Wayland, and creating configless, surfaceless GL core contexts on them.
#pragma once

#include <string>
#include <vector>

#include "gl_api.hpp"

namespace vgpu::opengl {

/// One initialised EGL display and where it came from. Displays stay initialised for the
/// life of the process (eglTerminate would pull contexts from under other runtimes' devices,
/// since EGL hands every caller the same display for the same device).
struct EglDisplaySource {
  EGLDisplay display = EGL_NO_DISPLAY;
  std::string platform;     ///< "device" (EGL_EXT_platform_device) or "surfaceless" (Mesa)
  std::string label;        ///< for messages: "EGL device 0 (/dev/dri/renderD128)"
  std::string node;         ///< DRM device file or render node, when the driver names one
  bool software = false;    ///< the EGL device says it is a software renderer (EGL_MESA_device_software)
  std::string egl_vendor;   ///< EGL_VENDOR of the display
  std::string egl_version;  ///< EGL_VERSION of the display
};

/// Loads libEGL.so.1 and its client (display-less) entry points; false with *reason when
/// the library or the extensions headless use needs are missing. Call once per process (discovery).
bool load_egl(std::string* reason);

/// Returns one initialised display per EGL device (EGL_EXT_device_enumeration +
/// EGL_EXT_platform_device); devices whose display fails to initialise are described in
/// *problems ("; "-separated). Needs load_egl() first; discovery only.
std::vector<EglDisplaySource> device_displays(std::string* problems);

/// Returns Mesa's surfaceless display, or one with display == EGL_NO_DISPLAY and *problem set.
/// Needs load_egl() first; discovery only.
EglDisplaySource surfaceless_display(std::string* problem);

/// Returns why dpy cannot host a configless, surfaceless context ("" when it can).
std::string missing_display_extensions(EGLDisplay dpy);

/// Creates a GL core context on dpy for the calling thread's use (binding the OpenGL API on
/// this thread). With *major == 0 it tries 4.6, 4.5 and 4.3 in turn; otherwise exactly
/// *major.*minor. Asks for GPU-reset notification (EGL_LOSE_CONTEXT_ON_RESET) where the
/// display offers it, else a plain context; *reset_notification says which it got. Sets
/// *major/*minor to what it created; returns EGL_NO_CONTEXT with *reason.
EGLContext create_context(EGLDisplay dpy, int* major, int* minor, bool* reset_notification, std::string* reason);

/// Makes ctx current on this thread without surfaces; false with *reason on failure, and
/// *context_lost (when given) set when EGL said EGL_CONTEXT_LOST (a power event or GPU reset).
bool make_current(EGLDisplay dpy, EGLContext ctx, std::string* reason, bool* context_lost = nullptr);

/// Releases and destroys ctx (made current on this thread), and this thread's EGL state.
void destroy_context(EGLDisplay dpy, EGLContext ctx);

}  // namespace vgpu::opengl
