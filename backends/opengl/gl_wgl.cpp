// SPDX-License-Identifier: Apache-2.0
// backends/opengl/gl_wgl.cpp — the window-system side on WGL (Windows): opengl32.dll loaded at
// run time, one hidden window per context (platform::GlWindow), a GL core context made with
// WGL_ARB_create_context from a throw-away legacy one. WGL cannot enumerate GPUs: its one
// source is the driver the desktop's pixel formats lead to.
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gl_context.hpp"
#include "vgpu/platform/dynamic_library.hpp"
#include "vgpu/platform/gl_window.hpp"

// WGL's calling convention (the same as every other on x86-64; matters on 32-bit x86 only).
#if defined(_WIN32) && !defined(_WIN64)
#define VGPU_WGL_API __stdcall
#else
#define VGPU_WGL_API
#endif

namespace vgpu::opengl {
namespace {

// opengl32.dll's exports vgpu uses (HGLRC and HDC as void*: no windows.h outside the platform layer).
using CreateContextFn = void*(VGPU_WGL_API*)(void* dc);
using DeleteContextFn = int(VGPU_WGL_API*)(void* rc);
using MakeCurrentFn = int(VGPU_WGL_API*)(void* dc, void* rc);
using GetProcAddressFn = void*(VGPU_WGL_API*)(const char* name);
// WGL_ARB_create_context and WGL_ARB_extensions_string, fetched with a context current.
using CreateContextAttribsFn = void*(VGPU_WGL_API*)(void* dc, void* share, const int* attributes);
using GetExtensionsStringFn = const char*(VGPU_WGL_API*)(void* dc);

// WGL_ARB_create_context(_profile, _robustness) tokens.
constexpr int kContextMajorVersion = 0x2091;
constexpr int kContextMinorVersion = 0x2092;
constexpr int kContextProfileMask = 0x9126;
constexpr int kContextCoreProfileBit = 0x0001;
constexpr int kResetNotificationStrategy = 0x8256;
constexpr int kLoseContextOnReset = 0x8252;

platform::DynamicLibrary g_opengl32;  // kept loaded for the life of the process
CreateContextFn g_create_context = nullptr;
DeleteContextFn g_delete_context = nullptr;
MakeCurrentFn g_make_current = nullptr;
GetProcAddressFn g_get_proc_address = nullptr;

// Returns the "major.minor" of a version pair.
std::string version_text(int major, int minor) { return std::to_string(major) + "." + std::to_string(minor); }

// The ARB entry points and extensions of the driver behind window's pixel format, read through a
// legacy context made current for the purpose (WGL hands them out only with one current).
struct ArbEntryPoints {
  CreateContextAttribsFn create_context_attribs = nullptr;
  std::string extensions;
};

// Returns the driver's ARB entry points, or none with *reason.
ArbEntryPoints arb_entry_points(void* dc, std::string* reason) {
  ArbEntryPoints out;
  void* legacy = g_create_context(dc);
  if (legacy == nullptr) {
    *reason = "wglCreateContext failed on the hidden window (" + platform::last_os_error_text() + ")";
    return out;
  }
  if (!g_make_current(dc, legacy)) {
    *reason = "wglMakeCurrent of the legacy context failed (" + platform::last_os_error_text() + ")";
    g_delete_context(legacy);
    return out;
  }
  out.create_context_attribs =
      reinterpret_cast<CreateContextAttribsFn>(g_get_proc_address("wglCreateContextAttribsARB"));
  if (auto get_extensions = reinterpret_cast<GetExtensionsStringFn>(g_get_proc_address("wglGetExtensionsStringARB")))
    if (const char* exts = get_extensions(dc)) out.extensions = exts;
  g_make_current(nullptr, nullptr);
  g_delete_context(legacy);
  if (out.create_context_attribs == nullptr)
    *reason =
        "the OpenGL driver has no WGL_ARB_create_context, so it gives no core profile (is it Windows' "
        "own GDI renderer, OpenGL 1.1? install the GPU vendor's driver)";
  return out;
}

}  // namespace

const char* window_system_name() { return "WGL"; }

bool load_context_api(std::string* reason) {
  std::string why;
  for (const std::string& name : platform::runtime_library_names(platform::Runtime::wgl))
    if ((g_opengl32 = platform::DynamicLibrary::load(name, &why))) break;
  if (!g_opengl32) {
    *reason = "opengl32.dll could not be loaded (" + why + "); it is part of Windows: check the system folder";
    return false;
  }
  g_opengl32.keep_loaded();
  g_create_context = reinterpret_cast<CreateContextFn>(g_opengl32.symbol("wglCreateContext"));
  g_delete_context = reinterpret_cast<DeleteContextFn>(g_opengl32.symbol("wglDeleteContext"));
  g_make_current = reinterpret_cast<MakeCurrentFn>(g_opengl32.symbol("wglMakeCurrent"));
  g_get_proc_address = reinterpret_cast<GetProcAddressFn>(g_opengl32.symbol("wglGetProcAddress"));
  if (!g_create_context || !g_delete_context || !g_make_current || !g_get_proc_address) {
    *reason = "opengl32.dll lacks the WGL 1.0 entry points (wglCreateContext, wglMakeCurrent, wglGetProcAddress)";
    return false;
  }
  return true;
}

std::vector<GlContextSource> primary_sources(std::string* problems) {
  (void)problems;  // nothing to initialise: each context makes its own window
  GlContextSource src;
  src.feature = "wgl";
  src.label = "WGL (the desktop's OpenGL driver)";
  return {src};
}

std::vector<GlContextSource> fallback_sources(std::string* problems) {
  (void)problems;
  return {};
}

std::string missing_source_features(const GlContextSource& src) {
  (void)src;  // what WGL lacks shows when a context is made (create_context says what)
  return "";
}

GlContext create_context(const GlContextSource& src, int* major, int* minor, bool* reset_notification,
                         std::string* reason) {
  (void)src;
  *reset_notification = false;
  auto window = std::make_unique<platform::GlWindow>(platform::GlWindow::create(reason));
  if (!*window) return {};
  void* dc = window->device_context();
  const ArbEntryPoints arb = arb_entry_points(dc, reason);
  if (arb.create_context_attribs == nullptr) return {};
  // Reset notification (GL_ARB_robustness's strategy alone, not robust buffer access) where
  // the driver offers WGL_ARB_create_context_robustness; a plain context otherwise.
  std::vector<std::pair<int, int>> strategies;
  if (has_listed_extension(arb.extensions.c_str(), "WGL_ARB_create_context_robustness"))
    strategies.emplace_back(kResetNotificationStrategy, kLoseContextOnReset);
  strategies.emplace_back(0, 0);  // plain
  static constexpr int kVersions[][2] = {{4, 6}, {4, 5}, {4, 3}};
  std::string tried;
  for (const auto& v : kVersions) {
    if (*major != 0 && (v[0] != *major || v[1] != *minor)) continue;
    std::string error;
    for (const auto& [name, value] : strategies) {
      const int attributes[] = {kContextMajorVersion,
                                v[0],
                                kContextMinorVersion,
                                v[1],
                                kContextProfileMask,
                                kContextCoreProfileBit,
                                name,
                                value,
                                0};
      if (void* rc = arb.create_context_attribs(dc, nullptr, attributes)) {
        *major = v[0];
        *minor = v[1];
        *reset_notification = name != 0;
        return GlContext{rc, window.release(), dc};
      }
      error = platform::last_os_error_text();  // the plain attempt's error is the one worth reporting
    }
    tried += (tried.empty() ? "" : ", ") + version_text(v[0], v[1]) + " (" + error + ")";
  }
  if (*major != 0 && tried.empty()) tried = version_text(*major, *minor) + " (not a version vgpu tries)";
  *reason = "no OpenGL core context could be created; tried " + tried + "; vgpu needs 4.3+ for compute shaders";
  return {};
}

bool make_current(const GlContextSource& src, const GlContext& ctx, std::string* reason, bool* context_lost) {
  (void)src;
  if (context_lost) *context_lost = false;  // WGL has no lost-context error of its own: GL reports resets
  if (g_make_current(ctx.surface, ctx.context)) return true;
  *reason = "wglMakeCurrent failed (" + platform::last_os_error_text() + ")";
  return false;
}

void destroy_context(const GlContextSource& src, GlContext& ctx) {
  (void)src;
  g_make_current(nullptr, nullptr);
  if (ctx.context != nullptr) g_delete_context(ctx.context);
  delete static_cast<platform::GlWindow*>(ctx.window);  // on this thread, which created it
  ctx = GlContext{};
}

void release_thread() {
  if (g_make_current) g_make_current(nullptr, nullptr);
}

GLADapiproc gl_proc_address(const char* name) {
  // wglGetProcAddress answers for extensions and GL 1.2+ only (some ICDs return 1, 2, 3 or -1
  // for "none"); GL 1.0/1.1 functions are opengl32.dll's own exports.
  void* p = g_get_proc_address(name);
  const auto bits = reinterpret_cast<std::intptr_t>(p);
  if (p == nullptr || bits == 1 || bits == 2 || bits == 3 || bits == -1) p = g_opengl32.symbol(name);
  return reinterpret_cast<GLADapiproc>(p);
}

}  // namespace vgpu::opengl
