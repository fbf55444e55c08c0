// SPDX-License-Identifier: Apache-2.0
// tests/support/newer_toolchain_shims.cpp — lets a Catch2 3 library compiled by a newer
// toolchain (Debian 13's libCatch2.a: GCC 14, glibc 2.41, as tools/dev.sh compat links it) link
// with an older one (Debian 12: GCC 12, glibc 2.36). It references three symbols the older
// runtime lacks; each is defined here as what the newer runtime does for it. Compiled only
// when the linker lacks them (tests/CMakeLists.txt checks); with a Catch2 3 built by the
// compiler in use (a distribution's own package) this file is not part of the build.
#include <cstdlib>
#include <exception>
#include <iostream>

namespace std {
/// GCC 13's <iostream> references this to pull the streams' initialisation into the link;
/// GCC 12 initialises them from the static std::ios_base::Init of each file that includes
/// <iostream>, as this one does, so there is nothing left to do.
void ios_base_library_init() {}
}  // namespace std

extern "C" {
void* __cxa_begin_catch(void*) noexcept;

/// GCC 14 calls this when an exception leaves a noexcept function's cleanup: handle the
/// exception, then terminate (what libstdc++ 14's own definition does).
[[noreturn]] void __cxa_call_terminate(void* exception) noexcept {
  if (exception != nullptr) __cxa_begin_catch(exception);
  std::terminate();
}

/// glibc 2.38's C23 strtoull (which also reads a 0b prefix, irrelevant to Catch's numbers).
unsigned long long __isoc23_strtoull(const char* text, char** end, int base) { return std::strtoull(text, end, base); }
}
