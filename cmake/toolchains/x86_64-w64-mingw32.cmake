# SPDX-License-Identifier: Apache-2.0
# Cross toolchain: Windows on x86-64, built on a Debian/Ubuntu x86-64 host with MinGW-w64's
# g++ (package g++-mingw-w64-x86-64-posix: the "posix" thread model, which std::thread and
# std::mutex need) and run under Wine. Debian ships no MinGW builds of vgpu's libraries, so
# tools/dev.sh cross windows builds them from their Debian source packages into a private
# prefix in the build tree and passes it here:
#   cmake -S . -B build-windows -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/x86_64-w64-mingw32.cmake \
#         -DVGPU_WINDOWS_PREFIX=$PWD/build-windows/prefix -DVGPU_WINDOWS_WINEPREFIX=$PWD/build-windows/wine
# Libraries, headers, CMake packages and pkg-config files are looked up only in that prefix
# and in MinGW's own root (/usr/x86_64-w64-mingw32), never in the host's /usr. Programs run
# through Wine (CMAKE_CROSSCOMPILING_EMULATOR): ctest's tests, the Catch2 test listing after
# each link, and the build-time generator vgpu-glsl-assemble. Tools found with find_program
# (glslc, glad, python3) are the host's.
set(CMAKE_SYSTEM_NAME Windows)
set(CMAKE_SYSTEM_PROCESSOR AMD64)

set(CMAKE_C_COMPILER x86_64-w64-mingw32-gcc-posix)
set(CMAKE_CXX_COMPILER x86_64-w64-mingw32-g++-posix)
set(CMAKE_RC_COMPILER x86_64-w64-mingw32-windres)

# Each try_compile reads this file again: it must see the prefix too.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES VGPU_WINDOWS_PREFIX VGPU_WINDOWS_WINEPREFIX)
if(NOT VGPU_WINDOWS_PREFIX)
  message(FATAL_ERROR "x86_64-w64-mingw32 toolchain: VGPU_WINDOWS_PREFIX is not set, so no Windows build of "
                      "oneTBB, xxHash or the other libraries can be found. Fix: run tools/dev.sh cross windows, "
                      "or pass -DVGPU_WINDOWS_PREFIX=<a prefix holding MinGW builds of them>.")
endif()

# The find root: the private prefix and MinGW's root; find_* re-root every search path there.
# Programs (glslc, glad, python3, wine) are the host's.
set(CMAKE_FIND_ROOT_PATH "${VGPU_WINDOWS_PREFIX}" /usr/x86_64-w64-mingw32)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# pkg-config: only the prefix's .pc files (PKG_CONFIG_LIBDIR replaces the default search path,
# which would find the host's libxxhash.pc). They hold absolute paths into the prefix.
set(ENV{PKG_CONFIG_LIBDIR} "${VGPU_WINDOWS_PREFIX}/lib/pkgconfig:${VGPU_WINDOWS_PREFIX}/share/pkgconfig")
set(ENV{PKG_CONFIG_PATH} "")
set(ENV{PKG_CONFIG_SYSROOT_DIR} "")

# Wine: 64-bit only (Debian's wine64). Its prefix (the C: drive, the registry) is kept in the
# build tree, never ~/.wine; WINEDEBUG=-all keeps Wine's own diagnostics out of test output.
# WINEPATH: where a program finds the DLLs it links beyond its own folder — MinGW's C++ runtime
# (libstdc++, libgcc_s_seh, libwinpthread) and the prefix's (tbb12.dll, libxxhash.dll).
find_program(VGPU_WINE64 NAMES wine64 wine PATHS /usr/lib/wine NO_CMAKE_FIND_ROOT_PATH)
if(NOT VGPU_WINE64)
  message(FATAL_ERROR "x86_64-w64-mingw32 toolchain: wine64 not found, so no test or build-time generator "
                      "can run. Fix: apt-get install wine64 wine (tools/dev.sh cross windows does).")
endif()
if(NOT VGPU_WINDOWS_WINEPREFIX)
  set(VGPU_WINDOWS_WINEPREFIX "${VGPU_WINDOWS_PREFIX}/../wine")
endif()
execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=libstdc++-6.dll
                OUTPUT_VARIABLE _vgpu_libstdcxx OUTPUT_STRIP_TRAILING_WHITESPACE)
get_filename_component(_vgpu_gcc_dlls "${_vgpu_libstdcxx}" DIRECTORY)
# The emulator: a shell script in the build tree (a list of env assignments would not survive
# CMake's list splitting at WINEPATH's semicolons), written again only when its text changes.
set(_vgpu_winepath "")
foreach(_vgpu_dir "${_vgpu_gcc_dlls}" /usr/x86_64-w64-mingw32/lib "${VGPU_WINDOWS_PREFIX}/bin")
  string(REPLACE "/" "\\" _vgpu_dir "Z:${_vgpu_dir}")
  list(APPEND _vgpu_winepath "${_vgpu_dir}")
endforeach()
list(JOIN _vgpu_winepath ";" _vgpu_winepath)
file(CONFIGURE OUTPUT "${VGPU_WINDOWS_WINEPREFIX}-run.sh" @ONLY CONTENT [[
#!/bin/sh
# Runs a Windows program under Wine (written by cmake/toolchains/x86_64-w64-mingw32.cmake).
WINEPREFIX='@VGPU_WINDOWS_WINEPREFIX@' WINEDEBUG=${WINEDEBUG:--all} WINEPATH='@_vgpu_winepath@' \
  exec '@VGPU_WINE64@' "$@"
]])
set(CMAKE_CROSSCOMPILING_EMULATOR /bin/sh "${VGPU_WINDOWS_WINEPREFIX}-run.sh")
