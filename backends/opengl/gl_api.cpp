// SPDX-License-Identifier: Apache-2.0
// backends/opengl/gl_api.cpp — GL loading through the window system, error names and string queries.
#include "gl_api.hpp"
#include "gl_context.hpp"

#include <cstdio>
#include <cstring>

namespace vgpu::opengl {
namespace {

std::mutex g_loader_mutex;  // serialises gladLoadGL: its pointers are process-wide
int g_loaded_version = 0;   // major*10+minor of the GL pointers loaded so far; guarded by it

// Returns code as "0x%04x".
std::string hex_code(unsigned code) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%04x", code);
  return buf;
}

}  // namespace

bool load_gl_functions(int major, int minor, std::string* reason) {
  std::lock_guard lock(g_loader_mutex);
  const int want = major * 10 + minor;
  if (want <= g_loaded_version) return true;
  // EGL 1.5 (and EGL_KHR_get_all_proc_addresses) returns core entry points too, so GL needs
  // no libGL/libOpenGL: the context's own driver answers through libEGL; WGL answers through
  // opengl32.dll and the driver's ICD.
  const int version = gladLoadGL(gl_proc_address);
  if (version == 0) {
    *reason = "glad could not load the OpenGL entry points through the window system's GetProcAddress";
    return false;
  }
  if (GLAD_VERSION_MAJOR(version) * 10 + GLAD_VERSION_MINOR(version) < 43) {
    *reason = "glad loaded only OpenGL " + std::to_string(GLAD_VERSION_MAJOR(version)) + "." +
              std::to_string(GLAD_VERSION_MINOR(version)) + " entry points; vgpu needs 4.3 (compute shaders)";
    return false;
  }
  g_loaded_version = want;
  return true;
}

std::string gl_error_name(GLenum error) {
  switch (error) {
    case GL_NO_ERROR:
      return "GL_NO_ERROR";
    case GL_INVALID_ENUM:
      return "GL_INVALID_ENUM";
    case GL_INVALID_VALUE:
      return "GL_INVALID_VALUE";
    case GL_INVALID_OPERATION:
      return "GL_INVALID_OPERATION";
    case GL_INVALID_FRAMEBUFFER_OPERATION:
      return "GL_INVALID_FRAMEBUFFER_OPERATION";
    case GL_OUT_OF_MEMORY:
      return "GL_OUT_OF_MEMORY";
    case GL_STACK_UNDERFLOW:
      return "GL_STACK_UNDERFLOW";
    case GL_STACK_OVERFLOW:
      return "GL_STACK_OVERFLOW";
    case GL_CONTEXT_LOST:
      return "GL_CONTEXT_LOST";
    default:
      return "GL error " + hex_code(error);
  }
}

std::string gl_string(GLenum name) {
  const GLubyte* s = glGetString(name);
  return s ? reinterpret_cast<const char*>(s) : "";
}

std::vector<std::string> gl_extensions() {
  std::vector<std::string> out;
  GLint n = 0;
  glGetIntegerv(GL_NUM_EXTENSIONS, &n);
  for (GLint i = 0; i < n; ++i)
    if (const GLubyte* s = glGetStringi(GL_EXTENSIONS, static_cast<GLuint>(i)))
      out.emplace_back(reinterpret_cast<const char*>(s));
  return out;
}

bool has_extension(const std::vector<std::string>& list, std::string_view name) {
  for (const auto& e : list)
    if (e == name) return true;
  return false;
}

bool has_listed_extension(const char* list, std::string_view name) {
  if (list == nullptr) return false;
  std::string_view rest(list);
  while (!rest.empty()) {
    const auto space = rest.find(' ');
    if (rest.substr(0, space) == name) return true;
    if (space == std::string_view::npos) break;
    rest.remove_prefix(space + 1);
  }
  return false;
}

GLenum take_gl_error() {
  GLenum first = GL_NO_ERROR;
  // A lost context may report GL_CONTEXT_LOST forever: bound the loop.
  for (int i = 0; i < 16; ++i) {
    const GLenum e = glGetError();
    if (e == GL_NO_ERROR) break;
    if (first == GL_NO_ERROR) first = e;
  }
  return first;
}

}  // namespace vgpu::opengl
