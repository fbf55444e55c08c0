// SPDX-License-Identifier: Apache-2.0
// core/runtime/device/device_host.hpp — one opened backend device together with what must live exactly
// as long as it: the call lock that serialises calls on it, its counters, and the backend
// objects waiting for the work that last used them (deferred destruction).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "vgpu/backend/device_impl.hpp"
#include "vgpu/counters.hpp"

namespace vgpu::detail {

class DeviceHost;

/// Holds a device's call lock for the duration of one call (from DeviceHost::lock()). Letting
/// it go frees the retired objects whose work has completed, then unlocks.
class [[nodiscard]] CallLock {
 public:
  explicit CallLock(DeviceHost& host) noexcept : host_(&host) {}
  CallLock(CallLock&& other) noexcept : host_(std::exchange(other.host_, nullptr)) {}
  CallLock(const CallLock&) = delete;
  CallLock& operator=(const CallLock&) = delete;
  CallLock& operator=(CallLock&&) = delete;
  ~CallLock();

 private:
  DeviceHost* host_;
};

/// The backend device behind a DeviceCore and every handle made from it; each handle state
/// holds it, so it outlives them all (and the DeviceCore).
/// Locking: lock() gives one call at a time the backend (DeviceImpl is single-threaded except
/// for the members it documents as concurrent, which core calls without the lock). A call that
/// waits for the device holds the lock meanwhile, so later calls on this device wait for it
/// (they would be ordered after it anyway); other devices have locks of their own.
/// Deferred destruction: retire() takes a backend object whose last handle went. It is freed
/// (under the lock) once impl().completed_serial() reaches the submitted_serial() read after
/// the handle went — polled whenever a call lets the lock go, and at close(). retire() never
/// waits: when another thread holds the lock (perhaps waiting for the GPU), the object is left
/// for that thread to free when its call ends.
/// Thread-safety: lock() and retire() are safe from any thread; retire() may also be called by
/// the thread holding the lock (a handle dropped inside a call). close() runs once, alone.
class DeviceHost {
 public:
  /// Takes the backend device and attaches counters and the dispatch time log to it: the
  /// Device's, which every host it has had (one per recovery) shares, so they continue across
  /// recoveries.
  DeviceHost(std::unique_ptr<DeviceImpl> impl, std::shared_ptr<Counters> counters,
             std::shared_ptr<DispatchTimeLog> times);
  ~DeviceHost();
  DeviceHost(const DeviceHost&) = delete;
  DeviceHost& operator=(const DeviceHost&) = delete;

  /// Returns the backend device.
  DeviceImpl& impl() const noexcept { return *impl_; }
  /// Returns the device's live counters.
  Counters& counters() noexcept { return *counters_; }

  /// Takes the call lock, waiting for the call another thread is in; throws invalid_argument
  /// when this thread holds it already (a CPU kernel calling into the device it runs on).
  CallLock lock();
  /// Throws lock()'s invalid_argument when this thread could never get the call lock (it holds
  /// it, or runs a kernel of this device); core checks it before it takes any other lock.
  void check_not_inside() const;
  /// Takes a backend object no handle refers to any more and frees it once the work that may
  /// use it has completed; never waits, never throws. buffer_bytes: the size of a buffer
  /// allocation, counted in counters().freed_bytes once it is freed (0 for other objects).
  void retire(std::unique_ptr<DeviceObject> object, std::uint64_t buffer_bytes = 0) noexcept;
  /// Called once, when nothing refers to the device any more: frees what has completed, lets
  /// the backend finish or give up its work (DeviceImpl::release), then frees the rest.
  /// Returns false when the backend must be leaked: the objects still waiting stay with it.
  bool close() noexcept;

 private:
  friend class CallLock;
  struct Retired {
    std::unique_ptr<DeviceObject> object;
    std::uint64_t buffer_bytes = 0;  // counted as freed once object is
  };
  struct Deferred {
    std::uint64_t serial;  // submitted_serial() when it was retired
    Retired retired;
  };
  bool held_here() const noexcept { return owner_.load(std::memory_order_relaxed) == std::this_thread::get_id(); }
  // Frees what is due and lets the lock go (CallLock's destructor).
  void unlock() noexcept;
  // Takes the lock if it is free and frees what is due; repeats while objects keep arriving.
  void reclaim_if_free() noexcept;
  // Tags retired with the current serial and keeps it (lock held).
  void defer_locked(Retired retired) noexcept;
  // Frees the objects of due, counting the buffer bytes freed (lock held).
  void free_locked(std::vector<Deferred>& due) noexcept;
  // Tags what other threads retired, then frees every object whose work has completed (lock held).
  void reclaim_locked() noexcept;

  std::shared_ptr<Counters> counters_;      // before impl_: the backend may count while it is destroyed
  std::shared_ptr<DispatchTimeLog> times_;  // before impl_, for the same reason
  std::unique_ptr<DeviceImpl> impl_;
  std::mutex call_mutex_;                 // the call lock
  std::atomic<std::thread::id> owner_{};  // the thread holding call_mutex_ (none: default id)
  std::vector<Deferred> deferred_;        // guarded by the call lock
  std::mutex incoming_mutex_;             // guards incoming_ (a leaf: nothing is called under it)
  std::vector<Retired> incoming_;         // retired while another thread held the lock
  std::atomic<bool> has_incoming_{false};
};

/// Returns a shared host for impl whose last reference closes it: deleted when close()
/// succeeds, else kept (reachable, never freed) for the rest of the process with a log line.
std::shared_ptr<DeviceHost> make_device_host(std::unique_ptr<DeviceImpl> impl, std::shared_ptr<Counters> counters,
                                             std::shared_ptr<DispatchTimeLog> times);

}  // namespace vgpu::detail
