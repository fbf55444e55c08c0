# SPDX-License-Identifier: Apache-2.0
# Cross toolchain: Linux on AArch64 (arm64), built on a Debian/Ubuntu x86-64 host with the
# distribution's cross compiler (crossbuild-essential-arm64) against its multiarch arm64
# packages (dpkg --add-architecture arm64; libtbb-dev:arm64, ...), which live beside the host's
# in /usr/lib/aarch64-linux-gnu, so the target's root is the host's own "/". tools/dev.sh cross
# arm64 installs all of it and uses this file:
#   cmake -S . -B build-arm64 -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/aarch64-linux-gnu.cmake
# Programs are run through qemu-aarch64 (CMAKE_CROSSCOMPILING_EMULATOR): ctest's tests, the
# Catch2 test listing after each link, and the build-time generator vgpu-glsl-assemble
# (cmake/VgpuGlsl.cmake), which CMake runs through the emulator since it is a target of this
# build. Tools found with find_program (glslc, glad, nvcc, python3) are the host's.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
# CMake would derive it from the compiler too; set here so find_library and find_package look
# in /usr/lib/aarch64-linux-gnu (and <prefix>/lib/aarch64-linux-gnu of CMAKE_PREFIX_PATH), never
# in the host's /usr/lib/x86_64-linux-gnu.
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
# No CMAKE_SYSROOT or CMAKE_FIND_ROOT_PATH: with multiarch the target's libraries and headers
# are under the host's /usr already (a root path would hide them or the host's tools).

# pkg-config: only the arm64 .pc files and the architecture-independent ones, never the
# host's (PKG_CONFIG_LIBDIR replaces the default search path). Each CMAKE_PREFIX_PATH entry's
# lib/aarch64-linux-gnu/pkgconfig goes in front: FindPkgConfig adds a prefix's
# lib/<arch>/pkgconfig on a native Debian build only, not when cross compiling.
# The environment is the process's: each try_compile reads this file again in the same cmake
# process, so it must see CMAKE_PREFIX_PATH too, or it would drop the prefix's folder again.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES CMAKE_PREFIX_PATH)
set(_vgpu_pc_dirs "")
foreach(_vgpu_prefix IN LISTS CMAKE_PREFIX_PATH)
  list(APPEND _vgpu_pc_dirs "${_vgpu_prefix}/lib/aarch64-linux-gnu/pkgconfig")
endforeach()
list(APPEND _vgpu_pc_dirs /usr/lib/aarch64-linux-gnu/pkgconfig /usr/share/pkgconfig)
string(REPLACE ";" ":" _vgpu_pc_dirs "${_vgpu_pc_dirs}")
set(ENV{PKG_CONFIG_LIBDIR} "${_vgpu_pc_dirs}")
set(ENV{PKG_CONFIG_PATH} "")
set(ENV{PKG_CONFIG_SYSROOT_DIR} "")

# -L /: qemu-aarch64 maps the program's absolute paths (the ELF interpreter
# /lib/ld-linux-aarch64.so.1, /usr/lib/aarch64-linux-gnu/...) onto the host's root, where
# libc6:arm64 and the other multiarch packages put them. Not /usr/aarch64-linux-gnu (the cross
# compiler's own libc): its loader would not find the multiarch libraries (oneTBB, Mesa).
find_program(VGPU_QEMU_AARCH64 qemu-aarch64)
if(NOT VGPU_QEMU_AARCH64)
  message(FATAL_ERROR "aarch64-linux-gnu toolchain: qemu-aarch64 not found, so no test or build-time "
                      "generator can run. Fix: apt-get install qemu-user (tools/dev.sh cross arm64 does).")
endif()
set(CMAKE_CROSSCOMPILING_EMULATOR "${VGPU_QEMU_AARCH64};-L;/")
