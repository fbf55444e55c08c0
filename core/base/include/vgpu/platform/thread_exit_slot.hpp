// SPDX-License-Identifier: Apache-2.0
// vgpu/platform/thread_exit_slot.hpp — a per-thread pointer whose destructor function runs when
// the thread exits (POSIX: a pthread key; Windows: a fiber-local-storage slot, FlsAlloc). Part
// of the platform layer (docs/platforms.md). Internal to vgpu.
//
// Why not a thread_local object with a destructor: MinGW-w64 keeps thread_local objects in
// emutls blocks that winpthreads may free before the C++ thread-exit destructors run, so such
// a destructor read freed memory (the CPU kernels' scratch crashed in _aligned_free at TBB
// worker exit under Wine). Here the pointer lives in the OS's own slot and is handed to the
// destructor, whatever order the runtime tears the thread down in.
//
// Thread-safety: get/set act on the calling thread's value only; a slot lives for the process
// (never destroyed: threads may exit during static destruction).
#pragma once

namespace vgpu::platform {

/// One per-thread pointer with a destructor for threads that exit holding a non-null value.
class ThreadExitSlot {
 public:
  /// Allocates the slot; destroy(value) runs at the exit of each thread whose value is not
  /// null. Aborts with a message if the OS has no slot left (a process-wide resource: a few
  /// per vgpu build, made once).
  explicit ThreadExitSlot(void (*destroy)(void*)) noexcept;
  ThreadExitSlot(const ThreadExitSlot&) = delete;
  ThreadExitSlot& operator=(const ThreadExitSlot&) = delete;

  /// Returns the calling thread's value (null until set).
  void* get() const noexcept;
  /// Sets the calling thread's value.
  void set(void* value) const noexcept;

 private:
  unsigned long key_;  // pthread_key_t or an FLS index, both fit
};

}  // namespace vgpu::platform
