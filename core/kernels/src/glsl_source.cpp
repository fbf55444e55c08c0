// SPDX-License-Identifier: Apache-2.0
// core/kernels/src/glsl_source.cpp — GLSL assembly and the built-in kernels' embedded text.
#include "vgpu/kernels/glsl_source.hpp"

#include <algorithm>
#include <set>

#include "vgpu/error.hpp"

namespace vgpu::kernels {
namespace {

struct EmbeddedGlsl {
  std::string_view name;
  std::string_view text;
};

// Generated at build time by cmake/VgpuEmbedGlsl.cmake from core/kernels/glsl/: defines
// kPreludeText and kBuiltinGlsl[] as raw string literals of the files' exact bytes.
#include "vgpu_glsl_embedded.inc"

constexpr std::string_view kSpace = " \t";

bool is_identifier(std::string_view s) {
  const auto alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  const auto digit = [](char c) { return c >= '0' && c <= '9'; };
  if (s.empty() || !alpha(s.front())) return false;
  return std::all_of(s.begin() + 1, s.end(), [&](char c) { return alpha(c) || digit(c); });
}

// Calls f(directive, rest) for every preprocessor line of text, with leading blanks and the
// blanks after '#' skipped: "  #  define X 1" gives ("define", "X 1").
template <class F>
void for_each_directive(std::string_view text, F&& f) {
  while (!text.empty()) {
    const auto eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view{} : text.substr(eol + 1);
    line.remove_prefix(std::min(line.size(), line.find_first_not_of(kSpace)));
    if (line.empty() || line.front() != '#') continue;
    line.remove_prefix(1);
    line.remove_prefix(std::min(line.size(), line.find_first_not_of(kSpace)));
    const auto end = std::min(line.size(), line.find_first_of(" \t\r"));
    std::string_view rest = line.substr(end);
    rest.remove_prefix(std::min(rest.size(), rest.find_first_not_of(kSpace)));
    f(line.substr(0, end), rest);
  }
}

// Names a user define must not take: whatever the prelude defines (it would be redefined
// after the user's value, a compile error pointing into the prelude), the names vgpu itself
// defines for OpenGL, and names the GLSL preprocessor predefines or reserves.
const std::set<std::string, std::less<>>& reserved_names() {
  static const std::set<std::string, std::less<>> names = [] {
    std::set<std::string, std::less<>> s{
        "VGPU_LOCAL_SIZE_X", "VGPU_LOCAL_SIZE_Y", "VGPU_LOCAL_SIZE_Z", "VGPU_PARAMS_BINDING", "VULKAN", "defined"};
    for_each_directive(kPreludeText, [&](std::string_view directive, std::string_view rest) {
      if (directive != "define") return;
      const auto end = rest.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_");
      s.emplace(rest.substr(0, end));
    });
    return s;
  }();
  return names;
}

void check_define(const std::string& name, const std::string& value) {
  if (!is_identifier(name))
    fail(ErrorCategory::invalid_argument, "GLSL define name '" + name + "' is not an identifier.",
         "name defines with letters, digits and '_' only, starting with a letter or '_'.");
  if (name.starts_with("GL_") || name.find("__") != std::string::npos || reserved_names().contains(name))
    fail(ErrorCategory::invalid_argument, "GLSL define name '" + name + "' is reserved (by GLSL or vgpu's prelude).",
         "rename the define; GL_*, names containing \"__\", VULKAN and vgpu's VGPU_LOCAL_SIZE_*, "
         "VGPU_PARAMS* and VGPU_LINEAR_GROUP are taken.");
  if (value.find_first_of("\r\n") != std::string::npos)
    fail(ErrorCategory::invalid_argument, "GLSL define '" + name + "' has a line break in its value.",
         "give the define a single-line value.");
}

}  // namespace

std::string assemble_glsl(std::string_view body, const std::map<std::string, std::string>& defines,
                          const std::array<std::uint32_t, 3>& workgroup_size, GlslTarget target,
                          std::uint32_t params_binding) {
  if (std::find(workgroup_size.begin(), workgroup_size.end(), 0u) != workgroup_size.end())
    fail(ErrorCategory::invalid_argument, "a GLSL kernel's workgroup size has a zero dimension.",
         "use a workgroup size of at least 1 in x, y and z.");
  for_each_directive(body, [](std::string_view directive, std::string_view) {
    if (directive == "version")
      fail(ErrorCategory::invalid_argument, "the GLSL kernel body has its own #version line.",
           "remove it: vgpu writes \"#version 450\", the defines and its prelude before the body.");
  });

  std::string text = "#version 450\n";
  for (const auto& [name, value] : defines) {
    check_define(name, value);
    text += "#define " + name;
    if (!value.empty()) text += " " + value;
    text += '\n';
  }
  if (target == GlslTarget::opengl) {
    text += "#define VGPU_LOCAL_SIZE_X " + std::to_string(workgroup_size[0]) + "\n";
    text += "#define VGPU_LOCAL_SIZE_Y " + std::to_string(workgroup_size[1]) + "\n";
    text += "#define VGPU_LOCAL_SIZE_Z " + std::to_string(workgroup_size[2]) + "\n";
    text += "#define VGPU_PARAMS_BINDING " + std::to_string(params_binding) + "\n";
  }
  text += kPreludeText;
  if (!text.ends_with('\n')) text += '\n';
  text += "#line 1\n";
  text += body;
  if (!text.ends_with('\n')) text += '\n';
  return text;
}

std::string_view builtin_glsl(std::string_view name) {
  for (const auto& kernel : kBuiltinGlsl)
    if (kernel.name == name) return kernel.text;
  return {};
}

std::string_view glsl_prelude() { return kPreludeText; }

}  // namespace vgpu::kernels
