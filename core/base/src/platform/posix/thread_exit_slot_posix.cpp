// SPDX-License-Identifier: Apache-2.0
// core/base/src/platform/posix/thread_exit_slot_posix.cpp — ThreadExitSlot as a pthread key
// (POSIX, and MinGW-w64's winpthreads where a build uses this file).
#include <pthread.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "vgpu/platform/thread_exit_slot.hpp"

namespace vgpu::platform {

static_assert(sizeof(pthread_key_t) <= sizeof(unsigned long), "a pthread key must fit ThreadExitSlot::key_");

ThreadExitSlot::ThreadExitSlot(void (*destroy)(void*)) noexcept : key_(0) {
  pthread_key_t key;
  if (const int rc = ::pthread_key_create(&key, destroy); rc != 0) {
    std::fprintf(stderr, "vgpu: fatal: pthread_key_create failed (%s): the process has no thread-local slot left\n",
                 std::strerror(rc));
    std::abort();
  }
  key_ = static_cast<unsigned long>(key);
}

void* ThreadExitSlot::get() const noexcept { return ::pthread_getspecific(static_cast<pthread_key_t>(key_)); }

void ThreadExitSlot::set(void* value) const noexcept { ::pthread_setspecific(static_cast<pthread_key_t>(key_), value); }

}  // namespace vgpu::platform
