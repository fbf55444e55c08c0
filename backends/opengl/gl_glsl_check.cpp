// SPDX-License-Identifier: Apache-2.0
// backends/opengl/gl_glsl_check.cpp — refusing SPIR-V-only GLSL before a GL driver sees it.
#include "gl_glsl_check.hpp"

#include <array>
#include <cctype>

#include "vgpu/error.hpp"

namespace vgpu::opengl {
namespace {

constexpr std::array<std::string_view, 4> kSpirvOnly = {"constant_id", "local_size_x_id", "local_size_y_id",
                                                        "local_size_z_id"};

bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

/// Returns the first SPIR-V-only identifier in text outside comments and the 1-based line it
/// is on, or an empty name.
std::pair<std::string_view, int> find_spirv_only(std::string_view text) {
  int line = 1;
  for (std::size_t i = 0; i < text.size();) {
    const char c = text[i];
    if (c == '\n') {
      ++line, ++i;
    } else if (text.substr(i, 2) == "//") {
      while (i < text.size() && text[i] != '\n') ++i;
    } else if (text.substr(i, 2) == "/*") {
      const auto end = text.find("*/", i + 2);
      const auto stop = end == std::string_view::npos ? text.size() : end + 2;
      for (; i < stop; ++i) line += text[i] == '\n';
    } else if (ident_char(c)) {
      std::size_t j = i;
      while (j < text.size() && ident_char(text[j])) ++j;
      const std::string_view word = text.substr(i, j - i);
      for (std::string_view bad : kSpirvOnly)
        if (word == bad) return {bad, line};
      i = j;
    } else {
      ++i;
    }
  }
  return {{}, 0};
}

[[noreturn]] void refuse(std::string_view kernel_name, std::string_view what, const std::string& where) {
  fail(ErrorCategory::compile_error,
       "GLSL kernel '" + std::string(kernel_name) + "' uses '" + std::string(what) + "' (" + where +
           "): specialization constants exist only for SPIR-V targets, and OpenGL compiles GLSL (some drivers "
           "crash on it, so vgpu does not pass it on).",
       "replace the specialization constant with a #define set through CompileOptions::defines, or run the kernel "
       "on Vulkan.");
}

}  // namespace

void check_glsl_for_gl(std::string_view kernel_name, std::string_view body,
                       const std::map<std::string, std::string>& defines) {
  if (auto [what, line] = find_spirv_only(body); !what.empty())
    refuse(kernel_name, what, "line " + std::to_string(line) + " of the GLSL source");
  for (const auto& [name, value] : defines)
    if (auto [what, line] = find_spirv_only(value); !what.empty()) refuse(kernel_name, what, "define " + name);
}

}  // namespace vgpu::opengl
