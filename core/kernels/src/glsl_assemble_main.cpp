// SPDX-License-Identifier: Apache-2.0
// core/kernels/src/glsl_assemble_main.cpp — vgpu-glsl-assemble, a build-time host tool: writes a
// built-in kernel's GLSL exactly as assemble_glsl(..., GlslTarget::vulkan, 0) produces it, for
// glslc to compile into the embedded L3 SPIR-V (cmake/VgpuGlsl.cmake). Sharing the function,
// not re-implementing it in CMake, keeps the precompiled SPIR-V true to the run-time text.
//   vgpu-glsl-assemble <builtin-name> <output.comp> [NAME=VALUE ...]
#include <cstdio>
#include <exception>
#include <fstream>
#include <map>
#include <string>

#include "vgpu/kernels/glsl_source.hpp"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: vgpu-glsl-assemble <builtin-name> <output.comp> [NAME=VALUE ...]\n");
    return 2;
  }
  try {
    const std::string_view body = vgpu::kernels::builtin_glsl(argv[1]);
    if (body.empty()) {
      std::fprintf(stderr, "vgpu-glsl-assemble: no built-in GLSL kernel named '%s'\n", argv[1]);
      return 1;
    }
    std::map<std::string, std::string> defines;
    for (int i = 3; i < argc; ++i) {
      const std::string arg = argv[i];
      const auto eq = arg.find('=');
      if (eq == std::string::npos) {
        defines[arg] = "";
      } else {
        defines[arg.substr(0, eq)] = arg.substr(eq + 1);
      }
    }
    // The Vulkan text does not depend on the workgroup size (specialisation constants).
    const std::string text =
        vgpu::kernels::assemble_glsl(body, defines, {1, 1, 1}, vgpu::kernels::GlslTarget::vulkan, 0);
    std::ofstream out(argv[2], std::ios::binary | std::ios::trunc);
    out << text;
    out.close();
    if (!out) {
      std::fprintf(stderr, "vgpu-glsl-assemble: cannot write '%s'\n", argv[2]);
      return 1;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "vgpu-glsl-assemble: %s\n", e.what());
    return 1;
  }
  return 0;
}
