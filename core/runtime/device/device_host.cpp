// SPDX-License-Identifier: Apache-2.0
// core/runtime/device/device_host.cpp — the per-device call lock and deferred destruction.
#include "device_host.hpp"

#include <string>

#include "vgpu/error.hpp"
#include "vgpu/log.hpp"

namespace vgpu::detail {
namespace {

// Backend devices that could not be released: kept, never freed, for the life of the process.
// Held here (not just dropped) so that the memory stays reachable: a leak checker then sees a
// deliberate keep, not a leak, and still reports every real one.
void keep_forever(DeviceHost* host) noexcept {
  static std::mutex mutex;
  static auto* kept = new std::vector<DeviceHost*>();  // never destroyed either
  std::lock_guard lock(mutex);
  try {
    kept->push_back(host);
  } catch (...) {  // out of memory: the device is still never freed, only unlisted
  }
}

// The deleter of a host: the backend may have to be leaked (work it gave up on still runs in
// the driver and uses its memory); it says why, core notes the leak.
void retire_host(DeviceHost* host) noexcept {
  if (host->close()) {
    delete host;
    return;
  }
  keep_forever(host);
  try {
    const DeviceInfo& info = host->impl().info();
    log(LogLevel::warn, "leaking the lost " + std::string(to_string(info.backend)) + " device '" + info.name +
                            "' (work it gave up waiting for may still run in the driver).");
  } catch (...) {  // nothing left to do for a log line that cannot be built
  }
}

}  // namespace

CallLock::~CallLock() {
  if (host_) host_->unlock();
}

DeviceHost::DeviceHost(std::unique_ptr<DeviceImpl> impl, std::shared_ptr<Counters> counters,
                       std::shared_ptr<DispatchTimeLog> times)
    : counters_(std::move(counters)), times_(std::move(times)), impl_(std::move(impl)) {
  impl_->attach_counters(counters_.get());
  impl_->attach_time_log(times_.get());
}

DeviceHost::~DeviceHost() = default;

CallLock DeviceHost::lock() {
  check_not_inside();
  call_mutex_.lock();
  owner_.store(std::this_thread::get_id(), std::memory_order_relaxed);
  return CallLock(*this);
}

void DeviceHost::check_not_inside() const {
  // This thread holds the lock, or runs a workgroup of a dispatch that holds it (a CPU kernel
  // on a TBB thread), directly or through a dispatch that such a workgroup made on another
  // device: waiting would never end.
  if (held_here() || DeviceImpl::runs_kernel_of(impl_.get()))
    fail(ErrorCategory::invalid_argument,
         "a call on " + std::string(to_string(impl_->info().backend)) + " device '" + impl_->info().name +
             "' was made from inside another call on the same device (a CPU kernel calling its own device?).",
         "call the device from outside its kernels: a device runs one call at a time, so the inner call would wait "
         "for the outer one forever.");
}

void DeviceHost::unlock() noexcept {
  if (!deferred_.empty() || has_incoming_.load(std::memory_order_acquire)) reclaim_locked();
  owner_.store(std::thread::id(), std::memory_order_relaxed);
  call_mutex_.unlock();
  // An object retired after the check above was left for this thread: free it now (or leave
  // it to whoever holds the lock next). Without a fence between the unlock and this load the
  // check may, rarely, miss one that is just arriving: it then waits for the next call or the
  // device's close, which is late but never lost (no fence on every call's path for that).
  if (has_incoming_.load(std::memory_order_acquire)) reclaim_if_free();
}

void DeviceHost::reclaim_if_free() noexcept {
  while (has_incoming_.load(std::memory_order_acquire)) {
    std::unique_lock lock(call_mutex_, std::try_to_lock);
    if (!lock.owns_lock()) return;  // the holder frees it when its call ends
    owner_.store(std::this_thread::get_id(), std::memory_order_relaxed);
    reclaim_locked();
    owner_.store(std::thread::id(), std::memory_order_relaxed);
  }
}

void DeviceHost::retire(std::unique_ptr<DeviceObject> object, std::uint64_t buffer_bytes) noexcept {
  if (!object) return;
  if (held_here()) {  // dropped inside a call (or while freeing): the lock is ours already
    defer_locked(Retired{std::move(object), buffer_bytes});
    return;
  }
  {
    std::lock_guard lock(incoming_mutex_);
    try {
      incoming_.push_back(Retired{std::move(object), buffer_bytes});
    } catch (...) {  // no memory to remember it: leak it rather than free it under the GPU
      (void)object.release();
      return;
    }
    has_incoming_.store(true, std::memory_order_release);
  }
  reclaim_if_free();
}

void DeviceHost::defer_locked(Retired retired) noexcept {
  try {
    deferred_.push_back(Deferred{impl_->submitted_serial(), std::move(retired)});
  } catch (...) {  // no memory to remember it: leak it rather than free it under the GPU
    (void)retired.object.release();
  }
}

void DeviceHost::free_locked(std::vector<Deferred>& due) noexcept {
  std::uint64_t bytes = 0;
  for (Deferred& d : due) {
    d.retired.object.reset();
    bytes += d.retired.buffer_bytes;
  }
  due.clear();
  if (bytes != 0) counters_->freed_bytes.fetch_add(bytes, std::memory_order_relaxed);
}

void DeviceHost::reclaim_locked() noexcept {
  if (has_incoming_.load(std::memory_order_acquire)) {
    std::vector<Retired> arrived;
    {
      std::lock_guard lock(incoming_mutex_);
      arrived.swap(incoming_);
      has_incoming_.store(false, std::memory_order_release);
    }
    for (Retired& r : arrived) defer_locked(std::move(r));
  }
  if (deferred_.empty()) return;
  const std::uint64_t done = impl_->completed_serial();
  // Moved out before they are freed: a destructor may retire further objects (a user kernel's
  // captured handles), which then join deferred_ and wait for the next reclaim.
  std::vector<Deferred> due;
  try {
    due.reserve(deferred_.size());
  } catch (...) {  // no memory for the list: everything waits for the next reclaim
    return;
  }
  std::size_t kept = 0;
  for (std::size_t i = 0; i < deferred_.size(); ++i) {
    if (deferred_[i].serial <= done)
      due.push_back(std::move(deferred_[i]));
    else if (kept++ != i)
      deferred_[kept - 1] = std::move(deferred_[i]);
  }
  deferred_.erase(deferred_.begin() + static_cast<std::ptrdiff_t>(kept), deferred_.end());
  free_locked(due);
}

bool DeviceHost::close() noexcept {
  // Nothing refers to the device any more, so no other thread can call or retire: the lock is
  // taken only so that destructors retiring further objects find it held.
  std::lock_guard lock(call_mutex_);
  owner_.store(std::this_thread::get_id(), std::memory_order_relaxed);
  reclaim_locked();
  const bool released = impl_->release();
  // Released: the backend has finished (or dropped) all its work, so everything may go now.
  // Not released: the objects still waiting stay with the device, which is kept.
  while (released && !deferred_.empty()) {
    std::vector<Deferred> rest;
    rest.swap(deferred_);
    free_locked(rest);
  }
  owner_.store(std::thread::id(), std::memory_order_relaxed);
  return released;
}

std::shared_ptr<DeviceHost> make_device_host(std::unique_ptr<DeviceImpl> impl, std::shared_ptr<Counters> counters,
                                             std::shared_ptr<DispatchTimeLog> times) {
  return std::shared_ptr<DeviceHost>(new DeviceHost(std::move(impl), std::move(counters), std::move(times)),
                                     retire_host);
}

}  // namespace vgpu::detail
