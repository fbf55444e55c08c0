// SPDX-License-Identifier: Apache-2.0
// backends/opengl/gl_egl.cpp — libEGL loading, headless displays and context creation.
#include "gl_egl.hpp"
#include "vgpu/platform/dynamic_library.hpp"

#include <utility>

namespace vgpu::opengl {
namespace {

// Client-extension entry points, fetched by name: glad loads extension pointers only for
// what a display reports, and these are needed before there is any display.
PFNEGLQUERYDEVICESEXTPROC g_query_devices = nullptr;
PFNEGLQUERYDEVICESTRINGEXTPROC g_query_device_string = nullptr;
PFNEGLGETPLATFORMDISPLAYEXTPROC g_get_platform_display = nullptr;
const char* g_client_extensions = nullptr;

// Returns EGL entry point name as T (null when libEGL lacks it).
template <class T>
T egl_proc(const char* name) {
  return reinterpret_cast<T>(eglGetProcAddress(name));
}

// Returns an EGL string of dpy ("" when null).
std::string egl_string(EGLDisplay dpy, EGLint name) {
  const char* s = eglQueryString(dpy, name);
  return s ? s : "";
}

// Initialises dpy and loads the display-level EGL entry points glad finds for it (EGL 1.5,
// its extensions); false with *problem set.
bool initialise(EglDisplaySource& src, std::string* problem) {
  EGLint major = 0, minor = 0;
  if (src.display == EGL_NO_DISPLAY) {
    *problem = src.label + ": eglGetPlatformDisplayEXT failed (" + egl_error_name(eglGetError()) + ")";
    return false;
  }
  if (!eglInitialize(src.display, &major, &minor)) {
    *problem = src.label + ": eglInitialize failed (" + egl_error_name(eglGetError()) + ")";
    return false;
  }
  // glad's gotcha: loading with EGL_NO_DISPLAY gives only EGL 1.0; load again per display.
  if (gladLoaderLoadEGL(src.display) == 0) {
    *problem = src.label + ": glad could not load its EGL " + std::to_string(major) + "." + std::to_string(minor) +
               " entry points";
    return false;
  }
  src.egl_vendor = egl_string(src.display, EGL_VENDOR);
  src.egl_version = egl_string(src.display, EGL_VERSION);
  return true;
}

}  // namespace

bool load_egl(std::string* reason) {
  // glad opens the same names; opening first tells "missing" from "not an EGL library" (and
  // the extra reference keeps the library for the life of the process).
  platform::DynamicLibrary lib;
  std::string why;
  for (const std::string& name : platform::runtime_library_names(platform::Runtime::egl))
    if ((lib = platform::DynamicLibrary::load(name, &why))) break;
  if (!lib) {
    *reason = "libEGL.so.1 could not be loaded" + (why.empty() ? std::string() : " (" + why + ")") +
              "; install an EGL implementation (libegl1 with Mesa's libegl-mesa0, or the GPU vendor's driver)";
    return false;
  }
  lib.keep_loaded();
  if (gladLoaderLoadEGL(EGL_NO_DISPLAY) == 0) {
    *reason =
        "libEGL.so.1 was loaded but glad found no EGL 1.0 entry points in it (not an EGL library?); "
        "check which libEGL.so.1 the library path finds first";
    return false;
  }
  g_client_extensions = eglQueryString(EGL_NO_DISPLAY, EGL_EXTENSIONS);
  if (g_client_extensions == nullptr || *g_client_extensions == '\0') {
    *reason =
        "libEGL.so.1 reports no client extensions, so it has no EGL driver: with glvnd's libEGL, install "
        "Mesa's libegl-mesa0 or the GPU vendor's EGL driver (glvnd looks for vendor files in "
        "/usr/share/glvnd/egl_vendor.d, or where __EGL_VENDOR_LIBRARY_FILENAMES/_DIRS point)";
    return false;
  }
  if (!has_egl_extension(g_client_extensions, "EGL_EXT_platform_base")) {
    *reason = "libEGL lacks EGL_EXT_platform_base (client extensions: " + std::string(g_client_extensions) +
              "), so no headless display can be opened; a newer libEGL (glvnd 1.x) is needed";
    return false;
  }
  g_get_platform_display = egl_proc<PFNEGLGETPLATFORMDISPLAYEXTPROC>("eglGetPlatformDisplayEXT");
  g_query_devices = egl_proc<PFNEGLQUERYDEVICESEXTPROC>("eglQueryDevicesEXT");
  g_query_device_string = egl_proc<PFNEGLQUERYDEVICESTRINGEXTPROC>("eglQueryDeviceStringEXT");
  if (g_get_platform_display == nullptr) {
    *reason = "libEGL advertises EGL_EXT_platform_base but has no eglGetPlatformDisplayEXT";
    return false;
  }
  return true;
}

std::vector<EglDisplaySource> device_displays(std::string* problems) {
  std::vector<EglDisplaySource> out;
  auto note = [&](const std::string& p) { *problems += (problems->empty() ? "" : "; ") + p; };
  const bool enumeration = has_egl_extension(g_client_extensions, "EGL_EXT_device_enumeration") ||
                           has_egl_extension(g_client_extensions, "EGL_EXT_device_base");
  if (!enumeration || !has_egl_extension(g_client_extensions, "EGL_EXT_platform_device") || !g_query_devices) {
    note("libEGL cannot enumerate devices (no EGL_EXT_device_enumeration + EGL_EXT_platform_device)");
    return out;
  }
  EGLint count = 0;
  if (!g_query_devices(0, nullptr, &count) || count <= 0) {
    note("eglQueryDevicesEXT found no EGL device");
    return out;
  }
  std::vector<EGLDeviceEXT> devices(static_cast<std::size_t>(count));
  if (!g_query_devices(count, devices.data(), &count)) {
    note("eglQueryDevicesEXT failed (" + egl_error_name(eglGetError()) + ")");
    return out;
  }
  devices.resize(static_cast<std::size_t>(count));
  for (std::size_t i = 0; i < devices.size(); ++i) {
    EglDisplaySource src;
    src.platform = "device";
    const char* exts = g_query_device_string ? g_query_device_string(devices[i], EGL_EXTENSIONS) : nullptr;
    src.software = has_egl_extension(exts, "EGL_MESA_device_software");
    if (g_query_device_string && has_egl_extension(exts, "EGL_EXT_device_drm_render_node"))
      if (const char* node = g_query_device_string(devices[i], EGL_DRM_RENDER_NODE_FILE_EXT)) src.node = node;
    if (src.node.empty() && g_query_device_string && has_egl_extension(exts, "EGL_EXT_device_drm"))
      if (const char* file = g_query_device_string(devices[i], EGL_DRM_DEVICE_FILE_EXT)) src.node = file;
    src.label = "EGL device " + std::to_string(i) +
                (src.node.empty() ? (src.software ? " (software)" : "") : " (" + src.node + ")");
    src.display = g_get_platform_display(EGL_PLATFORM_DEVICE_EXT, devices[i], nullptr);
    std::string problem;
    if (initialise(src, &problem))
      out.push_back(std::move(src));
    else
      note(problem);
  }
  return out;
}

EglDisplaySource surfaceless_display(std::string* problem) {
  EglDisplaySource src;
  src.platform = "surfaceless";
  src.label = "Mesa's surfaceless platform";
  if (!has_egl_extension(g_client_extensions, "EGL_MESA_platform_surfaceless")) {
    *problem = "libEGL has no EGL_MESA_platform_surfaceless (it is Mesa-only)";
    return src;
  }
  src.display = g_get_platform_display(EGL_PLATFORM_SURFACELESS_MESA, EGL_DEFAULT_DISPLAY, nullptr);
  if (!initialise(src, problem)) src.display = EGL_NO_DISPLAY;
  return src;
}

std::string missing_display_extensions(EGLDisplay dpy) {
  const char* exts = eglQueryString(dpy, EGL_EXTENSIONS);
  // EGL 1.5 made EGL_KHR_create_context's attributes core.
  const std::string version = egl_string(dpy, EGL_VERSION);
  const bool egl15 = version.size() >= 3 && (version[0] > '1' || (version[0] == '1' && version[2] >= '5'));
  std::string missing;
  for (const char* need : {"EGL_KHR_surfaceless_context", "EGL_KHR_create_context"}) {
    if (std::string_view(need) == "EGL_KHR_create_context" && egl15) continue;
    if (!has_egl_extension(exts, need)) missing += (missing.empty() ? "" : ", ") + std::string(need);
  }
  if (!has_egl_extension(exts, "EGL_KHR_no_config_context") && !has_egl_extension(exts, "EGL_MESA_configless_context"))
    missing += (missing.empty() ? "" : ", ") + std::string("EGL_KHR_no_config_context");
  return missing.empty() ? "" : "the EGL display lacks " + missing;
}

EGLContext create_context(EGLDisplay dpy, int* major, int* minor, bool* reset_notification, std::string* reason) {
  *reset_notification = false;
  if (!eglBindAPI(EGL_OPENGL_API)) {  // per thread
    *reason = "eglBindAPI(EGL_OPENGL_API) failed (" + egl_error_name(eglGetError()) +
              "): the EGL driver has no desktop OpenGL";
    return EGL_NO_CONTEXT;
  }
  // A context that learns of GPU resets (glGetGraphicsResetStatus) lets the device report a
  // loss instead of computing on in a dead context. Only the notification strategy is asked
  // for, not robust buffer access, which would bounds-check every SSBO access. EGL 1.5 (and
  // EGL_KHR_create_context) take it as a core attribute, EGL_EXT_create_context_robustness as
  // its own; a driver that offers neither gets a plain context.
  const char* exts = eglQueryString(dpy, EGL_EXTENSIONS);
  const std::string version = egl_string(dpy, EGL_VERSION);
  const bool egl15 = version.size() >= 3 && (version[0] > '1' || (version[0] == '1' && version[2] >= '5'));
  std::vector<std::pair<EGLint, EGLint>> strategies;
  if (egl15 || has_egl_extension(exts, "EGL_KHR_create_context"))
    strategies.emplace_back(EGL_CONTEXT_OPENGL_RESET_NOTIFICATION_STRATEGY, EGL_LOSE_CONTEXT_ON_RESET);
  if (has_egl_extension(exts, "EGL_EXT_create_context_robustness"))
    strategies.emplace_back(EGL_CONTEXT_OPENGL_RESET_NOTIFICATION_STRATEGY_EXT, EGL_LOSE_CONTEXT_ON_RESET_EXT);
  strategies.emplace_back(EGL_NONE, EGL_NONE);  // plain
  static constexpr int kVersions[][2] = {{4, 6}, {4, 5}, {4, 3}};
  std::string tried;
  for (const auto& v : kVersions) {
    if (*major != 0 && (v[0] != *major || v[1] != *minor)) continue;
    EGLint error = EGL_SUCCESS;
    for (const auto& [name, value] : strategies) {
      const EGLint attributes[] = {EGL_CONTEXT_MAJOR_VERSION,
                                   v[0],
                                   EGL_CONTEXT_MINOR_VERSION,
                                   v[1],
                                   EGL_CONTEXT_OPENGL_PROFILE_MASK,
                                   EGL_CONTEXT_OPENGL_CORE_PROFILE_BIT,
                                   name,
                                   value,
                                   EGL_NONE};
      EGLContext ctx = eglCreateContext(dpy, EGL_NO_CONFIG_KHR, EGL_NO_CONTEXT, attributes);
      if (ctx != EGL_NO_CONTEXT) {
        *major = v[0];
        *minor = v[1];
        *reset_notification = name != EGL_NONE;
        return ctx;
      }
      error = eglGetError();  // the plain attempt's error is the one worth reporting
    }
    tried += (tried.empty() ? "" : ", ") + std::to_string(v[0]) + "." + std::to_string(v[1]) + " (" +
             egl_error_name(error) + ")";
  }
  if (*major != 0 && tried.empty())
    tried = std::to_string(*major) + "." + std::to_string(*minor) + " (not a version vgpu tries)";
  *reason = "no OpenGL core context could be created; tried " + tried + "; vgpu needs 4.3+ for compute shaders";
  return EGL_NO_CONTEXT;
}

bool make_current(EGLDisplay dpy, EGLContext ctx, std::string* reason, bool* context_lost) {
  if (eglMakeCurrent(dpy, EGL_NO_SURFACE, EGL_NO_SURFACE, ctx)) return true;
  const EGLint error = eglGetError();
  if (context_lost) *context_lost = error == EGL_CONTEXT_LOST;
  *reason = "eglMakeCurrent without surfaces failed (" + egl_error_name(error) + ")";
  return false;
}

void destroy_context(EGLDisplay dpy, EGLContext ctx) {
  eglMakeCurrent(dpy, EGL_NO_SURFACE, EGL_NO_SURFACE, EGL_NO_CONTEXT);
  if (ctx != EGL_NO_CONTEXT) eglDestroyContext(dpy, ctx);
  eglReleaseThread();
}

}  // namespace vgpu::opengl
