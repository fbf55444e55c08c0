// SPDX-License-Identifier: Apache-2.0
// core/base/src/shader_toolchain.cpp — finds and loads libvgpu_shader_toolchain.so once per
// process (vgpu/shader_toolchain.hpp): beside the binary that holds vgpu's code first, so an
// application's copy of libvgpu gets the module shipped with it, never another build's.
#include "vgpu/shader_toolchain.hpp"

#include <dlfcn.h>

#include <exception>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

// The module's entry point; weak, so it is null unless the program links the module's code in.
extern "C" const vgpu::toolchain::ShaderToolchain* vgpu_shader_toolchain_table(std::uint32_t abi_version)
    __attribute__((weak));

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

constexpr const char* kFix =
    "install libvgpu_shader_toolchain.so of this vgpu build beside libvgpu (cmake --install puts it there), or run "
    "on a backend that needs no SPIR-V (vgpu-probe lists what is available).";

// The folder of the binary this function was linked into: libvgpu.so, or a program with vgpu
// linked in statically (tests, vgpu-probe).
std::filesystem::path own_folder() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<const void*>(&own_folder), &info) == 0 || info.dli_fname == nullptr) return {};
  std::error_code ec;
  std::filesystem::path p = std::filesystem::weakly_canonical(info.dli_fname, ec);
  return (ec ? std::filesystem::path(info.dli_fname) : p).parent_path();
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
  if (vgpu_shader_toolchain_table != nullptr) {
    out.table = checked(&vgpu_shader_toolchain_table, "linked into this program", &tried);
    if (out.table) return out;
  }
  std::vector<std::string> candidates;
  if (const std::filesystem::path folder = own_folder(); !folder.empty()) {
    candidates.push_back((folder / kToolchainModuleName).string());
    candidates.push_back((folder.parent_path() / "lib" / kToolchainModuleName).string());
  }
  candidates.emplace_back(kToolchainModuleName);  // the dynamic loader's search path
  for (const std::string& path : candidates) {
    std::error_code ec;
    if (path.find('/') != std::string::npos && !std::filesystem::exists(path, ec)) {
      tried += "; " + path + ": not there";
      continue;
    }
    // RTLD_LOCAL: glslang's, SPIRV-Tools' and SPIRV-Cross's symbols stay the module's own.
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* e = dlerror();
      tried += "; " + (path.find('/') == std::string::npos ? "the library search path" : path) + ": " +
               (e ? e : "could not be loaded");
      continue;
    }
    auto entry = reinterpret_cast<Entry>(dlsym(handle, "vgpu_shader_toolchain_table"));
    if (entry == nullptr) {
      tried += "; " + path + ": has no vgpu_shader_toolchain_table";
      dlclose(handle);
      continue;
    }
    if ((out.table = checked(entry, path, &tried)) != nullptr) return out;  // kept loaded for the process
    dlclose(handle);
  }
  out.problem = std::string("the SPIR-V toolchain (") + kToolchainModuleName +
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
  fail(ErrorCategory::unavailable, shader_toolchain_problem() + ".", kFix);
}

void raise(const ToolchainFailure& failure) { fail(failure.category, failure.problem, failure.fix); }

}  // namespace vgpu::toolchain
