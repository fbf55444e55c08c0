// SPDX-License-Identifier: Apache-2.0
// core/base/src/platform/posix/process_posix.cpp — process and thread facts on Linux and macOS.
#include <pthread.h>
#include <unistd.h>

#include <string>

#include "vgpu/platform/process.hpp"

namespace vgpu::platform {

long process_id() noexcept { return static_cast<long>(::getpid()); }

bool on_initial_thread() noexcept {
#if defined(__linux__)
  return ::gettid() == ::getpid();
#elif defined(__APPLE__)
  return ::pthread_main_np() != 0;
#else
  return false;
#endif
}

void set_thread_name(std::thread& t, std::string_view name) noexcept {
#if defined(__linux__)
  // Linux keeps 15 characters and a NUL; a longer name makes the call fail.
  const std::string n(name.substr(0, 15));
  ::pthread_setname_np(t.native_handle(), n.c_str());
#else
  // macOS names only the calling thread (pthread_setname_np(const char*)), which t is not.
  (void)t;
  (void)name;
#endif
}

bool is_terminal(std::FILE* stream) noexcept { return ::isatty(::fileno(stream)) != 0; }

}  // namespace vgpu::platform
