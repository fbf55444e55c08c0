// SPDX-License-Identifier: Apache-2.0
// backends/opengl/gl_egl.cpp — the window-system side on EGL (Linux and wherever libEGL is):
// libEGL loading, headless displays (EGL devices, Mesa's surfaceless platform) and configless,
// surfaceless context creation.
#include <glad/egl.h>

#include <cstdio>
#include <utility>

#include "gl_context.hpp"
#include "vgpu/platform/dynamic_library.hpp"

namespace vgpu::opengl {
namespace {

// Client-extension entry points, fetched by name: glad loads extension pointers only for
// what a display reports, and these are needed before there is any display.
PFNEGLQUERYDEVICESEXTPROC g_query_devices = nullptr;
PFNEGLQUERYDEVICESTRINGEXTPROC g_query_device_string = nullptr;
PFNEGLGETPLATFORMDISPLAYEXTPROC g_get_platform_display = nullptr;
const char* g_client_extensions = nullptr;

// Returns an EGL error code's name, e.g. "EGL_BAD_MATCH".
std::string egl_error_name(EGLint error) {
  switch (error) {
    case EGL_SUCCESS:
      return "EGL_SUCCESS";
    case EGL_NOT_INITIALIZED:
      return "EGL_NOT_INITIALIZED";
    case EGL_BAD_ACCESS:
      return "EGL_BAD_ACCESS";
    case EGL_BAD_ALLOC:
      return "EGL_BAD_ALLOC";
    case EGL_BAD_ATTRIBUTE:
      return "EGL_BAD_ATTRIBUTE";
    case EGL_BAD_CONFIG:
      return "EGL_BAD_CONFIG";
    case EGL_BAD_CONTEXT:
      return "EGL_BAD_CONTEXT";
    case EGL_BAD_CURRENT_SURFACE:
      return "EGL_BAD_CURRENT_SURFACE";
    case EGL_BAD_DISPLAY:
      return "EGL_BAD_DISPLAY";
    case EGL_BAD_MATCH:
      return "EGL_BAD_MATCH";
    case EGL_BAD_NATIVE_PIXMAP:
      return "EGL_BAD_NATIVE_PIXMAP";
    case EGL_BAD_NATIVE_WINDOW:
      return "EGL_BAD_NATIVE_WINDOW";
    case EGL_BAD_PARAMETER:
      return "EGL_BAD_PARAMETER";
    case EGL_BAD_SURFACE:
      return "EGL_BAD_SURFACE";
    case EGL_CONTEXT_LOST:
      return "EGL_CONTEXT_LOST";
    case EGL_BAD_DEVICE_EXT:
      return "EGL_BAD_DEVICE_EXT";
    default: {
      char buf[32];
      std::snprintf(buf, sizeof buf, "EGL error 0x%04x", static_cast<unsigned>(error));
      return buf;
    }
  }
}

// Returns true when the space-separated EGL extension string holds name.
bool has_egl_extension(const char* list, std::string_view name) { return has_listed_extension(list, name); }

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
bool initialise(GlContextSource& src, std::string* problem) {
  EGLint major = 0, minor = 0;
  if (src.display == nullptr) {
    *problem = src.label + ": eglGetPlatformDisplayEXT failed (" + egl_error_name(eglGetError()) + ")";
    return false;
  }
  if (!eglInitialize(src.display, &major, &minor)) {
    *problem = src.label + ": eglInitialize failed (" + egl_error_name(eglGetError()) + ")";
    return false;
  }
  // glad's gotcha: loading with EGL_NO_DISPLAY gives only EGL 1.0; load again per display.
  if (gladLoaderLoadEGL(static_cast<EGLDisplay>(src.display)) == 0) {
    *problem = src.label + ": glad could not load its EGL " + std::to_string(major) + "." + std::to_string(minor) +
               " entry points";
    return false;
  }
  return true;
}

}  // namespace

const char* window_system_name() { return "EGL"; }

bool load_context_api(std::string* reason) {
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

std::vector<GlContextSource> primary_sources(std::string* problems) {
  std::vector<GlContextSource> out;
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
    GlContextSource src;
    src.feature = "egl_device";
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

std::vector<GlContextSource> fallback_sources(std::string* problems) {
  auto note = [&](const std::string& p) { *problems += (problems->empty() ? "" : "; ") + p; };
  GlContextSource src;
  src.feature = "egl_surfaceless";
  src.label = "Mesa's surfaceless platform";
  if (!has_egl_extension(g_client_extensions, "EGL_MESA_platform_surfaceless")) {
    note("libEGL has no EGL_MESA_platform_surfaceless (it is Mesa-only)");
    return {};
  }
  src.display = g_get_platform_display(EGL_PLATFORM_SURFACELESS_MESA, EGL_DEFAULT_DISPLAY, nullptr);
  std::string problem;
  if (!initialise(src, &problem)) {
    note(problem);
    return {};
  }
  return {std::move(src)};
}

std::string missing_source_features(const GlContextSource& src) {
  const auto dpy = static_cast<EGLDisplay>(src.display);
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

GlContext create_context(const GlContextSource& src, int* major, int* minor, bool* reset_notification,
                         std::string* reason) {
  const auto dpy = static_cast<EGLDisplay>(src.display);
  *reset_notification = false;
  if (!eglBindAPI(EGL_OPENGL_API)) {  // per thread
    *reason = "eglBindAPI(EGL_OPENGL_API) failed (" + egl_error_name(eglGetError()) +
              "): the EGL driver has no desktop OpenGL";
    return {};
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
        return GlContext{ctx, nullptr, nullptr};
      }
      error = eglGetError();  // the plain attempt's error is the one worth reporting
    }
    tried += (tried.empty() ? "" : ", ") + std::to_string(v[0]) + "." + std::to_string(v[1]) + " (" +
             egl_error_name(error) + ")";
  }
  if (*major != 0 && tried.empty())
    tried = std::to_string(*major) + "." + std::to_string(*minor) + " (not a version vgpu tries)";
  *reason = "no OpenGL core context could be created; tried " + tried + "; vgpu needs 4.3+ for compute shaders";
  return {};
}

bool make_current(const GlContextSource& src, const GlContext& ctx, std::string* reason, bool* context_lost) {
  if (eglMakeCurrent(static_cast<EGLDisplay>(src.display), EGL_NO_SURFACE, EGL_NO_SURFACE, ctx.context)) return true;
  const EGLint error = eglGetError();
  if (context_lost) *context_lost = error == EGL_CONTEXT_LOST;
  *reason = "eglMakeCurrent without surfaces failed (" + egl_error_name(error) + ")";
  return false;
}

void destroy_context(const GlContextSource& src, GlContext& ctx) {
  const auto dpy = static_cast<EGLDisplay>(src.display);
  eglMakeCurrent(dpy, EGL_NO_SURFACE, EGL_NO_SURFACE, EGL_NO_CONTEXT);
  if (ctx.context != nullptr) eglDestroyContext(dpy, ctx.context);
  ctx = GlContext{};
  eglReleaseThread();
}

void release_thread() { eglReleaseThread(); }

GLADapiproc gl_proc_address(const char* name) { return reinterpret_cast<GLADapiproc>(eglGetProcAddress(name)); }

}  // namespace vgpu::opengl
