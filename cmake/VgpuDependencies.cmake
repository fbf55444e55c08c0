# SPDX-License-Identifier: Apache-2.0
# Every dependency comes from a Debian package, found here; nothing is downloaded.

find_package(Threads REQUIRED)
find_package(TBB REQUIRED)

# xsimd 8.1's exported target links a nonexistent "xtl" target; give it an empty one (Debian
# 13's xsimd 13 also finds the xtl package, xtl-dev, whose config then keeps this target: vgpu
# uses no xtl header).
if(NOT TARGET xtl)
  add_library(xtl INTERFACE IMPORTED)
endif()
find_package(xsimd REQUIRED)
# The CPU kernels know xsimd 8's and 12+'s names (fallback/cpu/kernels/simd.hpp).
if(xsimd_VERSION VERSION_LESS 8)
  message(FATAL_ERROR "vgpu: xsimd ${xsimd_VERSION} (${xsimd_DIR}) is older than 8. Fix: install "
                      "xsimd 8 or 12+ (Debian: libxsimd-dev) or point CMAKE_PREFIX_PATH at one.")
endif()

find_package(PkgConfig REQUIRED)
pkg_check_modules(XXHASH REQUIRED IMPORTED_TARGET libxxhash)
add_library(vgpu_xxhash INTERFACE)
target_link_libraries(vgpu_xxhash INTERFACE PkgConfig::XXHASH)
# cpuinfo: the platform layer's CPU features (with the OS's register support), caches and name
# on every OS and architecture. Through its .pc file, which Debian installs per architecture
# (its CMake config is not multiarch), so a cross build finds the target's. Optional on Windows
# x86-64 only: without it the platform layer reads the same facts itself (CPUID, XGETBV,
# GetLogicalProcessorInformationEx: core/base/src/platform/windows/cpu_info_windows.cpp).
add_library(vgpu_cpuinfo INTERFACE)
if(WIN32)
  pkg_check_modules(CPUINFO IMPORTED_TARGET libcpuinfo)
else()
  pkg_check_modules(CPUINFO REQUIRED IMPORTED_TARGET libcpuinfo)
endif()
if(CPUINFO_FOUND)
  set(VGPU_HAVE_CPUINFO ON)
  target_link_libraries(vgpu_cpuinfo INTERFACE PkgConfig::CPUINFO)
else()
  set(VGPU_HAVE_CPUINFO OFF)
  message(STATUS "vgpu: no cpuinfo (libcpuinfo.pc): the Windows platform layer reads CPUID itself")
endif()

# nlohmann-json is the library's own (selection store, L2 metadata); CLI11 only vgpu-probe's.
find_package(nlohmann_json 3 REQUIRED)
if(VGPU_BUILD_TOOLS)
  find_package(CLI11 REQUIRED)
endif()

# Backends: AUTO turns a backend on where its build-time dependencies exist.
# vgpu_resolve_backend(<option> <dir> <missing> <found_what>): settles the backend option (ON,
# OFF or AUTO) from what its build needs: its sources in <dir>, and what the caller looked for;
# missing lists what was not found (empty: everything is there), found_what names what was.
function(vgpu_resolve_backend var dir missing found_what)
  if(NOT EXISTS "${PROJECT_SOURCE_DIR}/${dir}/CMakeLists.txt")
    list(APPEND missing "the backend sources (${dir})")
  endif()
  list(JOIN missing ", " missing_what)
  if(${var} STREQUAL "AUTO")
    if(NOT missing)
      set(${var} ON PARENT_SCOPE)
      message(STATUS "vgpu: ${var}=ON (${found_what} found)")
    else()
      set(${var} OFF PARENT_SCOPE)
      message(STATUS "vgpu: ${var}=OFF (${missing_what} not found)")
    endif()
  elseif(${var} AND missing)
    message(FATAL_ERROR "vgpu: ${var}=ON but ${missing_what} was not found")
  endif()
endfunction()

# CUDA needs only cuda.h and nvrtc.h to build (libcuda.so.1 and NVRTC are dlopen'ed at run
# time), plus the backend's sources.
set(vgpu_cuda_missing "")
if(VGPU_WITH_CUDA)  # ON or AUTO
  find_path(VGPU_CUDA_INCLUDE_DIR NAMES cuda.h nvrtc.h
            HINTS ENV CUDA_HOME ENV CUDA_PATH PATH_SUFFIXES include
            PATHS /usr/local/cuda/include /usr/local/cuda /usr/include)
  if(NOT VGPU_CUDA_INCLUDE_DIR OR NOT EXISTS "${VGPU_CUDA_INCLUDE_DIR}/nvrtc.h")
    list(APPEND vgpu_cuda_missing "cuda.h and nvrtc.h (the CUDA toolkit's headers)")
  endif()
endif()

# OpenGL needs: the glad generator (python3-glad), which writes the GL 4.6 core + EGL 1.5
# loaders into the build tree at build time (nothing generated is committed; libEGL.so.1 itself
# is opened at run time, so no GL/EGL library or header is needed to build), and its sources.
set(vgpu_opengl_missing "")
if(VGPU_WITH_OPENGL)  # ON or AUTO
  find_program(VGPU_GLAD glad)
  if(NOT VGPU_GLAD)
    list(APPEND vgpu_opengl_missing "the glad generator (package python3-glad)")
  endif()
endif()

# Vulkan needs: the Vulkan headers (the loader itself is opened at run time), glslc for the
# built-in kernels' SPIR-V (L3), the shader layer's libraries (below) and its sources.
set(vgpu_vulkan_missing "")
if(VGPU_WITH_VULKAN)  # ON or AUTO
  find_package(Vulkan QUIET)
  if(NOT TARGET Vulkan::Headers)
    find_path(VGPU_VULKAN_INCLUDE_DIR vulkan/vulkan.h)
    if(VGPU_VULKAN_INCLUDE_DIR)
      add_library(Vulkan::Headers INTERFACE IMPORTED)
      set_target_properties(Vulkan::Headers PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${VGPU_VULKAN_INCLUDE_DIR}")
    else()
      list(APPEND vgpu_vulkan_missing "the Vulkan headers (package libvulkan-dev)")
    endif()
  endif()

  find_program(VGPU_GLSLC glslc HINTS "${Vulkan_GLSLC_EXECUTABLE}")
  if(NOT VGPU_GLSLC)
    list(APPEND vgpu_vulkan_missing "glslc (package glslc)")
  endif()
endif()

# The shader layer (core/shader: GLSL -> SPIR-V, reflection), built with either GPU API:
# shaderc + glslang + SPIRV-Tools as static archives (Debian's libshaderc.so.1 crashes when
# linked directly) and SPIRV-Cross's C API (package libspirv-cross-c-shared-dev).
set(vgpu_shader_missing "")
if(VGPU_WITH_VULKAN OR VGPU_WITH_OPENGL)  # ON or AUTO
  # Link order matters for static archives: shaderc first, SPIRV-Tools last. Newer glslang
  # releases fold some of the middle ones into libglslang.a, so those are optional.
  find_path(VGPU_SHADERC_INCLUDE_DIR shaderc/shaderc.h)
  set(VGPU_SHADERC_LIBRARIES "")
  set(vgpu_shaderc_ok TRUE)
  if(NOT VGPU_SHADERC_INCLUDE_DIR)
    set(vgpu_shaderc_ok FALSE)
  endif()
  foreach(lib shaderc_combined glslang SPIRV? MachineIndependent? OSDependent? GenericCodeGen? OGLCompiler?
              SPIRV-Tools-opt SPIRV-Tools)
    string(REGEX REPLACE "[?]$" "" name "${lib}")
    string(MAKE_C_IDENTIFIER "VGPU_LIB_${name}" var)
    find_library(${var} NAMES lib${name}.a)
    mark_as_advanced(${var})
    if(${var})
      list(APPEND VGPU_SHADERC_LIBRARIES "${${var}}")
    elseif(NOT lib MATCHES "[?]$")
      set(vgpu_shaderc_ok FALSE)
    endif()
  endforeach()
  if(NOT vgpu_shaderc_ok)
    list(APPEND vgpu_shader_missing "the static shaderc/glslang/SPIRV-Tools libraries (packages libshaderc-dev, glslang-dev, spirv-tools)")
  endif()
  pkg_check_modules(SPIRV_CROSS_C IMPORTED_TARGET spirv-cross-c-shared)
  if(NOT SPIRV_CROSS_C_FOUND)
    list(APPEND vgpu_shader_missing "SPIRV-Cross's C API (package libspirv-cross-c-shared-dev)")
  endif()
  list(APPEND vgpu_vulkan_missing ${vgpu_shader_missing})
  list(APPEND vgpu_opengl_missing ${vgpu_shader_missing})
endif()

vgpu_resolve_backend(VGPU_WITH_OPENGL backends/opengl "${vgpu_opengl_missing}" "glad and the OpenGL backend sources")
vgpu_resolve_backend(VGPU_WITH_VULKAN backends/vulkan "${vgpu_vulkan_missing}"
                     "Vulkan headers, glslc, static shaderc and the Vulkan backend sources")
vgpu_resolve_backend(VGPU_WITH_CUDA backends/cuda "${vgpu_cuda_missing}" "cuda.h, nvrtc.h and the CUDA backend sources")

# SPIRV-Tools' validator checks SPIR-V payloads read from L2 before a driver sees them
# (cache/src/spirv_check.cpp, through its C API). Debian's spirv-tools ships only the static
# archive (already linked for shaderc when Vulkan is on; --exclude-libs keeps its symbols out
# of a shared libvgpu). Without it (no Vulkan backend, no package) only size and magic are
# checked: then no driver loads SPIR-V.
find_path(VGPU_SPIRV_TOOLS_INCLUDE_DIR spirv-tools/libspirv.h)
find_library(VGPU_SPIRV_TOOLS_LIBRARY NAMES libSPIRV-Tools.a SPIRV-Tools)
mark_as_advanced(VGPU_SPIRV_TOOLS_INCLUDE_DIR VGPU_SPIRV_TOOLS_LIBRARY)
if(VGPU_SPIRV_TOOLS_INCLUDE_DIR AND VGPU_SPIRV_TOOLS_LIBRARY)
  set(VGPU_HAVE_SPIRV_TOOLS ON)
  message(STATUS "vgpu: SPIR-V payloads are validated with SPIRV-Tools (${VGPU_SPIRV_TOOLS_LIBRARY})")
else()
  set(VGPU_HAVE_SPIRV_TOOLS OFF)
  if(VGPU_WITH_VULKAN OR VGPU_WITH_OPENGL)
    message(FATAL_ERROR "vgpu: the shader layer (Vulkan, OpenGL) needs SPIRV-Tools (spirv-tools/libspirv.h and libSPIRV-Tools.a, package spirv-tools) to validate cached SPIR-V")
  endif()
  message(STATUS "vgpu: SPIRV-Tools not found: cached SPIR-V is checked for its size and magic only")
endif()
