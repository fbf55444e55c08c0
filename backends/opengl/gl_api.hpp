// SPDX-License-Identifier: Apache-2.0
// backends/opengl/gl_api.hpp — the glad-generated GL entry points and small helpers around
// them. Every OpenGL backend source includes GL through this header only (the window system's
// headers stay inside gl_egl.cpp and gl_wgl.cpp).
//
// glad keeps its function pointers in process-wide globals. GL pointers are loaded by
// load_gl_functions() with a context current, under a mutex, and again only for a context of
// a higher version than any loaded before (EGL and WGL's ICDs return the same pointers for
// every context of a driver, so reloading writes the same values), so threads already calling
// GL never see a pointer change under them in practice.
#pragma once

#include <glad/gl.h>

#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace vgpu::opengl {

/// Loads GL entry points through the window system (gl_proc_address) for the context current on this thread,
/// whose version is major.minor; returns false (with *reason) when glad cannot load them.
bool load_gl_functions(int major, int minor, std::string* reason);

/// Returns a GL error code's name, e.g. "GL_OUT_OF_MEMORY".
std::string gl_error_name(GLenum error);

/// Returns a GL string of the current context ("" when the driver returns null).
std::string gl_string(GLenum name);
/// Returns the current context's extension names (glGetStringi).
std::vector<std::string> gl_extensions();
/// Returns true when list holds name.
bool has_extension(const std::vector<std::string>& list, std::string_view name);
/// Returns true when the space-separated extension string list (EGL's, WGL's) holds name.
bool has_listed_extension(const char* list, std::string_view name);

/// Returns and clears every pending GL error of the current context (GL_NO_ERROR when none).
GLenum take_gl_error();

}  // namespace vgpu::opengl
