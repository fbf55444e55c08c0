// SPDX-License-Identifier: Apache-2.0
// core/base/src/platform/windows/thread_exit_slot_windows.cpp — ThreadExitSlot as a fiber-local
// storage slot: Windows runs an FLS slot's callback with the thread's value when the thread
// exits (and when the slot is freed, which never happens here).
#include <windows.h>

#include <cstdio>
#include <cstdlib>

#include "vgpu/platform/thread_exit_slot.hpp"
#include "windows_error.hpp"

namespace vgpu::platform {

// On x86-64 and ARM64 Windows there is one calling convention, so the destroy function is the
// FLS callback itself (32-bit x86's NTAPI would differ; vgpu does not build for it).
static_assert(sizeof(void*) == 8, "ThreadExitSlot passes a C++ function as an FLS callback: 64-bit Windows only");

ThreadExitSlot::ThreadExitSlot(void (*destroy)(void*)) noexcept : key_(0) {
  const DWORD index = ::FlsAlloc(reinterpret_cast<PFLS_CALLBACK_FUNCTION>(destroy));
  if (index == FLS_OUT_OF_INDEXES) {
    std::fprintf(stderr, "vgpu: fatal: FlsAlloc failed (%s): the process has no fiber-local slot left\n",
                 detail::message_of(::GetLastError()).c_str());
    std::abort();
  }
  key_ = index;
}

void* ThreadExitSlot::get() const noexcept { return ::FlsGetValue(static_cast<DWORD>(key_)); }

void ThreadExitSlot::set(void* value) const noexcept { ::FlsSetValue(static_cast<DWORD>(key_), value); }

}  // namespace vgpu::platform
