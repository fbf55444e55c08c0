# SPDX-License-Identifier: Apache-2.0
# Build options: backends (auto-detected in VgpuDependencies.cmake), sanitizers, warnings.

# vgpu_backend_option(<name> <title>): the option VGPU_WITH_<NAME> (ON, OFF, AUTO) that builds
# backends/<name>/, and <name> appended to VGPU_BACKENDS, the list every build file loops over
# (backends/CMakeLists.txt, the registry's VGPU_WITH_* definitions, the per-backend tests).
# VgpuDependencies.cmake resolves the option (vgpu_resolve_backend). The CPU fallback is always built.
set(VGPU_BACKENDS "")
macro(vgpu_backend_option name title)
  string(TOUPPER "${name}" _vgpu_upper)
  set(VGPU_WITH_${_vgpu_upper} "AUTO" CACHE STRING "Build the ${title} backend (ON, OFF, AUTO)")
  list(APPEND VGPU_BACKENDS ${name})
endmacro()
vgpu_backend_option(opengl OpenGL)
vgpu_backend_option(vulkan Vulkan)
vgpu_backend_option(cuda CUDA)
set(VGPU_SANITIZE "" CACHE STRING
    "Sanitizers to build with: a comma or semicolon list of address, undefined, leak, thread (empty: none)")
# libvgpu (and libvgpu_mpi) shared or static: VGPU_BUILD_SHARED where given, else
# BUILD_SHARED_LIBS where the builder or a parent project set it, else shared. No
# BUILD_SHARED_LIBS option is defined here: a parent project's own libraries keep their default.
if(DEFINED VGPU_BUILD_SHARED)
  set(VGPU_LIBRARY_SHARED ${VGPU_BUILD_SHARED})
elseif(DEFINED BUILD_SHARED_LIBS)
  set(VGPU_LIBRARY_SHARED ${BUILD_SHARED_LIBS})
else()
  set(VGPU_LIBRARY_SHARED ON)
endif()
if(VGPU_LIBRARY_SHARED)
  set(VGPU_LIBRARY_TYPE SHARED)
else()
  set(VGPU_LIBRARY_TYPE STATIC)
endif()

# What is built beside the library: with all three OFF only libvgpu (and the Python module, see
# VGPU_WITH_PYTHON) is built, so a packager needs only the library's own dependencies (CLI11 is
# a tools-only one; BUILD_TESTING=OFF still turns the tests off too). Each is ON when vgpu is
# the top-level project and OFF inside another one (VGPU_IS_TOP_LEVEL), as are the install rules.
option(VGPU_BUILD_TOOLS "Build vgpu-probe, vgpu-demo and vgpu-example (tools/; needs CLI11)" ${VGPU_IS_TOP_LEVEL})
option(VGPU_BUILD_TESTS "Build the tests in tests/ (needs Catch2 and the tools)" ${VGPU_IS_TOP_LEVEL})
option(VGPU_BUILD_BENCH "Build the benchmarks in bench/" ${VGPU_IS_TOP_LEVEL})
option(VGPU_INSTALL "Add vgpu's install rules (library, headers, CMake package, tools, Python module)"
       ${VGPU_IS_TOP_LEVEL})
if(VGPU_BUILD_TESTS AND (NOT DEFINED BUILD_TESTING OR BUILD_TESTING) AND NOT VGPU_BUILD_TOOLS)
  # The tests drive vgpu-probe (its JSON, exit codes and cache subcommands).
  message(FATAL_ERROR "vgpu: VGPU_BUILD_TESTS=ON needs VGPU_BUILD_TOOLS=ON (the tests run vgpu-probe). "
                      "Fix: pass -DVGPU_BUILD_TESTS=OFF too, or leave VGPU_BUILD_TOOLS ON.")
endif()

add_library(vgpu_warnings INTERFACE)
target_compile_options(vgpu_warnings INTERFACE -Wall -Wextra -Wpedantic)

# Debug information in a .dwo file beside each object (split DWARF), not copied into every
# program that links the ~70 test and tool programs' static vgpu_internal; gdb and sanitizer
# reports read the .dwo files from the build tree, and an installed libvgpu carries only the
# skeleton. OFF keeps debug information in the binaries. What stays in the objects and the
# programs (line tables, addresses, GCC's name indexes for gdb) is zlib-compressed where the
# toolchain can (-gz, --compress-debug-sections; gdb and addr2line read it): a test program
# 58 MB -> 23 MB, an object with its .dwo less than half (docs/architecture.md, Build weight).
option(VGPU_SPLIT_DWARF "Keep debug information in .dwo files beside the objects (-gsplit-dwarf)" ON)
option(VGPU_COMPRESS_DEBUG "Compress debug sections in objects and programs (-gz)" ON)
# Both are for ELF (Linux) only: MinGW's GCC accepts -gsplit-dwarf, but its ld then places the
# .debug_gnu_pubnames sections below the image base ("section below image base"), and Windows
# and Wine refuse the program ("Bad EXE format"); PE and Mach-O keep their debug information
# plain, in the binary.
if(NOT CMAKE_EXECUTABLE_FORMAT STREQUAL "ELF")
  set(VGPU_SPLIT_DWARF OFF)
  set(VGPU_COMPRESS_DEBUG OFF)
endif()
if(VGPU_SPLIT_DWARF)
  include(CheckCXXCompilerFlag)
  check_cxx_compiler_flag(-gsplit-dwarf VGPU_HAVE_SPLIT_DWARF)
  if(VGPU_HAVE_SPLIT_DWARF)
    add_compile_options("$<$<AND:$<COMPILE_LANGUAGE:C,CXX>,$<CONFIG:Debug,RelWithDebInfo>>:-gsplit-dwarf>")
  endif()
endif()
if(VGPU_COMPRESS_DEBUG)
  include(CheckCXXCompilerFlag)  # again: VGPU_SPLIT_DWARF may be off
  include(CheckLinkerFlag)
  check_cxx_compiler_flag(-gz VGPU_HAVE_GZ)
  check_linker_flag(CXX -Wl,--compress-debug-sections=zlib VGPU_HAVE_COMPRESS_DEBUG_LINK)
  if(VGPU_HAVE_GZ)
    add_compile_options("$<$<AND:$<COMPILE_LANGUAGE:C,CXX>,$<CONFIG:Debug,RelWithDebInfo>>:-gz>")
  endif()
  if(VGPU_HAVE_COMPRESS_DEBUG_LINK)
    add_link_options("$<$<AND:$<LINK_LANGUAGE:C,CXX>,$<CONFIG:Debug,RelWithDebInfo>>:LINKER:--compress-debug-sections=zlib>")
  endif()
endif()

if(VGPU_SANITIZE)
  string(REPLACE "," ";" _vgpu_sanitizers "${VGPU_SANITIZE}")
  list(REMOVE_DUPLICATES _vgpu_sanitizers)
  foreach(s IN LISTS _vgpu_sanitizers)
    if(NOT s MATCHES "^(address|undefined|leak|thread)$")
      message(FATAL_ERROR "VGPU_SANITIZE: '${s}' is not a sanitizer (use a list of address, undefined, leak, thread; "
                          "got '${VGPU_SANITIZE}')")
    endif()
  endforeach()
  if("thread" IN_LIST _vgpu_sanitizers AND ("address" IN_LIST _vgpu_sanitizers OR "leak" IN_LIST _vgpu_sanitizers))
    message(FATAL_ERROR "VGPU_SANITIZE: thread cannot be combined with address or leak (got '${VGPU_SANITIZE}'); "
                        "build them in separate build directories")
  endif()
  list(JOIN _vgpu_sanitizers "," _vgpu_sanitize_flag)
  # -fno-sanitize-recover: a UBSan finding fails the test that caused it instead of scrolling by.
  add_compile_options(-fsanitize=${_vgpu_sanitize_flag} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${_vgpu_sanitize_flag})
endif()
# The Python module (python/): AUTO builds it where Python 3 (with its headers) and pybind11 exist.
# Inside another project it is OFF unless asked for.
if(VGPU_IS_TOP_LEVEL)
  set(VGPU_WITH_PYTHON "AUTO" CACHE STRING "Build the vgpu Python module (ON, OFF, AUTO)")
else()
  set(VGPU_WITH_PYTHON "OFF" CACHE STRING "Build the vgpu Python module (ON, OFF, AUTO)")
endif()
