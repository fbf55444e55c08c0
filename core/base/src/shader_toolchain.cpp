// SPDX-License-Identifier: Apache-2.0
// core/base/src/shader_toolchain.cpp — finds and loads the SPIR-V toolchain module once per
// process (vgpu/shader_toolchain.hpp): beside the binary that holds vgpu's code first, so an
// application's copy of libvgpu gets the module shipped with it, never another build's.
#include "vgpu/shader_toolchain.hpp"

#include <exception>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "vgpu/platform/dynamic_library.hpp"

// The module's entry point; weak, so it is null unless the program links the module's code in.
// Windows (MSVC, and MinGW's ld too) has no undefined weak references in a linked image: there
// the module is always loaded at run time.
#if !defined(_WIN32)
extern "C" const vgpu::toolchain::ShaderToolchain* vgpu_shader_toolchain_table(std::uint32_t abi_version)
    __attribute__((weak));
#endif

namespace vgpu::toolchain {
namespace {

#ifndef VGPU_TOOLCHAIN_BUILD_ID
#error "VGPU_TOOLCHAIN_BUILD_ID must be defined by the build (core/CMakeLists.txt)"
#endif

using Entry = const ShaderToolchain* (*)(std::uint32_t);

struct Loaded {
  const ShaderToolchain* table = nullptr;
  std::string problem;  // why not, without the Fix
};

// What to do about a missing toolchain.
std::string fix_text() {
#if VGPU_HAVE_TOOLCHAIN_MODULE
  return "install " + platform::shared_library_file_name(kToolchainModuleBase) +
         " of this vgpu build beside libvgpu (cmake --install puts it there), or run on a backend that needs no "
         "SPIR-V (vgpu-probe lists what is available).";
#else
  return "build vgpu with VGPU_WITH_VULKAN or VGPU_WITH_OPENGL (with shaderc, glslang, SPIRV-Tools and SPIRV-Cross) "
         "for GLSL kernels, or give the kernel a dialect this build runs (cpu; vgpu-probe lists the backends).";
#endif
}

// A table from entry if it is usable, else why not (appended to *tried).
const ShaderToolchain* checked(Entry entry, const std::string& where, std::string* tried) {
  const ShaderToolchain* t = entry(kToolchainAbiVersion);
  if (t == nullptr) {
    *tried += "; " + where + ": built for another table version";
    return nullptr;
  }
  if (t->build_id == nullptr || std::string_view(t->build_id) != toolchain_build_id()) {
    *tried += "; " + where + ": from another vgpu build (" + (t->build_id ? t->build_id : "?") + ", not " +
              toolchain_build_id() + ")";
    return nullptr;
  }
  return t;
}

Loaded load() {
  Loaded out;
  std::string tried;
#if !VGPU_HAVE_TOOLCHAIN_MODULE
  out.problem =
      "the SPIR-V toolchain (GLSL compiler, SPIR-V validator and reflection) is not part of this vgpu build "
      "(configured without the Vulkan and OpenGL backends, which alone build it): GLSL kernels cannot be "
      "compiled";
  return out;
#endif
#if !defined(_WIN32)
  if (vgpu_shader_toolchain_table != nullptr) {
    out.table = checked(&vgpu_shader_toolchain_table, "linked into this program", &tried);
    if (out.table) return out;
  }
#endif
  const std::string module_name = platform::shared_library_file_name(kToolchainModuleBase);
  std::vector<std::string> candidates;
  // The folder of the binary vgpu's code is linked into: libvgpu, or a program with vgpu
  // linked in statically (tests, vgpu-probe); then its ../lib (a program in bin/).
  if (const std::filesystem::path folder = platform::own_module_folder(); !folder.empty()) {
    candidates.push_back((folder / module_name).string());
    candidates.push_back((folder.parent_path() / "lib" / module_name).string());
  }
  candidates.emplace_back(module_name);  // the dynamic loader's search path
  for (const std::string& path : candidates) {
    const bool bare = path.find_first_of("/\\") == std::string::npos;
    std::error_code ec;
    if (!bare && !std::filesystem::exists(path, ec)) {
      tried += "; " + path + ": not there";
      continue;
    }
    // Loaded with its symbols kept to itself: glslang's, SPIRV-Tools' and SPIRV-Cross's stay the module's own.
    std::string why;
    platform::DynamicLibrary lib = platform::DynamicLibrary::load(path, &why);
    if (!lib) {
      tried += "; " + (bare ? std::string("the library search path") : path) + ": " + why;
      continue;
    }
    auto entry = reinterpret_cast<Entry>(lib.symbol("vgpu_shader_toolchain_table"));
    if (entry == nullptr) {
      tried += "; " + path + ": has no vgpu_shader_toolchain_table";
      continue;
    }
    if ((out.table = checked(entry, path, &tried)) != nullptr) {
      lib.keep_loaded();  // for the process: the table points into it
      return out;
    }  // else unloaded here
  }
  out.problem = std::string("the SPIR-V toolchain (") + module_name +
                ": GLSL compiler, SPIR-V validator and reflection), which the Vulkan and OpenGL backends need, "
                "could not be loaded (" +
                tried.substr(2) + ")";
  return out;
}

const Loaded& loaded() {
  static const Loaded once = [] {
    try {
      return load();
    } catch (const std::exception& e) {  // bad_alloc, filesystem_error: reported, never thrown
      Loaded l;
      l.problem = std::string("the SPIR-V toolchain could not be looked for: ") + e.what();
      return l;
    }
  }();
  return once;
}

}  // namespace

const char* toolchain_build_id() noexcept { return VGPU_TOOLCHAIN_BUILD_ID; }

const ShaderToolchain* shader_toolchain() noexcept { return loaded().table; }

const std::string& shader_toolchain_problem() noexcept { return loaded().problem; }

const ShaderToolchain& require_shader_toolchain() {
  if (const ShaderToolchain* t = shader_toolchain()) return *t;
  fail(ErrorCategory::unavailable, shader_toolchain_problem() + ".", fix_text());
}

void raise(const ToolchainFailure& failure) { fail(failure.category, failure.problem, failure.fix); }

}  // namespace vgpu::toolchain
