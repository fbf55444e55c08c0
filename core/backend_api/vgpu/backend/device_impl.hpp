// vgpu/backend/device_impl.hpp — what a backend implements for one opened device.
// Backend-author interface: included by backends/*, fallback/* and core only, never by users.
// Core validates every argument (sizes, slots, params, groups) and keeps the counters before
// calling these, so implementations only do the work.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>

#include "vgpu/backend/deadline.hpp"
#include "vgpu/counters.hpp"
#include "vgpu/device_info.hpp"
#include "vgpu/kernel_source.hpp"
#include "vgpu/params.hpp"

namespace vgpu {

// vgpu/backend/backend_settings.hpp defines these; it includes the cache, whose kernel_key.hpp
// includes this header, so they are only declared here.
struct BackendSettings;
namespace cache {
class DiskStore;
}  // namespace cache

/// A backend's buffer allocation.
class BufferImpl {
 public:
  virtual ~BufferImpl() = default;
};

/// A backend's compiled kernel (pipeline, program, module function, CPU entry).
class KernelImpl {
 public:
  virtual ~KernelImpl() = default;
};

/// A backend's binding of buffers to a kernel's slots (descriptor set, argument pack).
class BindingSetImpl {
 public:
  virtual ~BindingSetImpl() = default;
};

/// A backend's recorded batch (command buffer, CUDA graph), resubmittable.
class RecordedBatchImpl {
 public:
  virtual ~RecordedBatchImpl() = default;
};

/// One validated dispatch handed to a backend. Pointers stay valid for the recorded batch's
/// lifetime (core keeps the owning handles alive beside it).
struct DispatchCommand {
  KernelImpl* kernel = nullptr;
  BindingSetImpl* bindings = nullptr;
  ParamsBlock params;
  Groups groups;
};

/// One validated host → buffer copy of a round trip.
struct HostWriteOp {
  BufferImpl* buffer = nullptr;
  std::uint64_t offset = 0;
  const void* data = nullptr;
  std::uint64_t bytes = 0;  ///< > 0
};

/// One validated buffer → host copy of a round trip.
struct HostReadOp {
  BufferImpl* buffer = nullptr;
  std::uint64_t offset = 0;
  void* out = nullptr;
  std::uint64_t bytes = 0;  ///< > 0
};

/// One opened device as its backend implements it.
/// Time limits: every member that may wait for submitted work gets the call's Deadline and
/// must give up there (fail_timeout); members without one (compile, create_buffer, the
/// destructors of a backend's objects) bound their waits by timeout(). A backend whose wait
/// gives up while work is still in flight calls mark_lost() first; core then refuses every
/// later call, and Runtime::open() opens a fresh device for the same id.
/// Thread-safety: core calls every member from any thread, possibly concurrently, except
/// that calls on one BufferImpl/RecordedBatchImpl are ordered by the caller's own ordering.
/// Implementations must be safe under that contract; the timeout and lost state below are
/// safe from any thread.
class DeviceImpl {
 public:
  /// Starts with settings' timeout; settings are the opening runtime's (the backend got them
  /// from its factory), or, when null or left out, BackendSettings::process().
  explicit DeviceImpl(std::shared_ptr<const BackendSettings> settings = nullptr);
  virtual ~DeviceImpl() = default;
  /// Returns the device's description (stable for the device's lifetime).
  virtual const DeviceInfo& info() const = 0;
  /// Allocates bytes (> 0, within limits); throws out_of_memory.
  virtual std::unique_ptr<BufferImpl> create_buffer(std::uint64_t bytes) = 0;
  /// Copies host data into the buffer after earlier submitted work that may use it.
  virtual void write(BufferImpl& buffer, std::uint64_t offset, const void* data, std::uint64_t bytes,
                     const Deadline& deadline) = 0;
  /// Copies buffer bytes to host memory after earlier submitted work finishes.
  virtual void read(BufferImpl& buffer, std::uint64_t offset, void* out, std::uint64_t bytes,
                    const Deadline& deadline) = 0;
  /// Copies between buffers in submission order.
  virtual void copy(BufferImpl& src, std::uint64_t src_offset, BufferImpl& dst, std::uint64_t dst_offset,
                    std::uint64_t bytes, const Deadline& deadline) = 0;
  /// Compiles code, the entry of source in one of info().dialects (core picks the first the
  /// kernel has); throws compile_error with the log.
  virtual std::unique_ptr<KernelImpl> compile(const KernelSource& source, const DialectSource& code,
                                              const CompileOptions& options) = 0;
  /// Binds buffers by slot (by_slot[slot], null where the kernel declares no such slot).
  virtual std::unique_ptr<BindingSetImpl> bind(KernelImpl& kernel, std::span<BufferImpl* const> by_slot) = 0;
  /// Records commands into a resubmittable batch.
  virtual std::unique_ptr<RecordedBatchImpl> record(std::span<const DispatchCommand> commands) = 0;
  /// Submits a recorded batch; may return before it finishes (a synchronous backend runs it
  /// within deadline).
  virtual void submit(RecordedBatchImpl& batch, const Deadline& deadline) = 0;
  /// Waits for every submitted batch, until deadline.
  virtual void synchronize(const Deadline& deadline) = 0;
  /// Writes, submits batch (when not null), then reads, waiting for the reads; returns with
  /// every out filled. The default makes the separate calls; a backend may fuse them (CUDA
  /// replays a repeated round trip as one graph). One deadline bounds the whole trip.
  virtual void round_trip(std::span<const HostWriteOp> writes, RecordedBatchImpl* batch,
                          std::span<const HostReadOp> reads, const Deadline& deadline) {
    for (const HostWriteOp& w : writes) write(*w.buffer, w.offset, w.data, w.bytes, deadline);
    if (batch) submit(*batch, deadline);
    for (const HostReadOp& r : reads) read(*r.buffer, r.offset, r.out, r.bytes, deadline);
  }
  /// Submits a one-off batch the backend now owns (Device::dispatch); the default submits it
  /// and lets it go, backends that run asynchronously keep it alive until it has run.
  virtual void submit_owned(std::unique_ptr<RecordedBatchImpl> batch, const Deadline& deadline) {
    submit(*batch, deadline);
  }
  /// Called by core once no handle uses the device any more, just before it is deleted:
  /// finishes (within timeout()) or gives up outstanding work. Returns false when work the
  /// driver still runs uses this object's memory; vgpu then leaks the object (the backend logs
  /// why) rather than free what the driver still touches. The default has nothing to wait for.
  virtual bool release() noexcept { return true; }

  /// Sets the limit of the waits that get no deadline from their call (0: none). Core sets it
  /// from Device::set_timeout and from its runtime's timeout when it wraps the device; it
  /// starts as the settings' timeout (RuntimeOptions::timeout, else VGPU_TIMEOUT_MS).
  void set_timeout(std::chrono::milliseconds limit) noexcept {
    timeout_ms_.store(limit.count(), std::memory_order_relaxed);
  }
  /// Returns the limit set_timeout set.
  std::chrono::milliseconds timeout() const noexcept {
    return std::chrono::milliseconds(timeout_ms_.load(std::memory_order_relaxed));
  }
  /// Returns a deadline timeout() from now, for waits that got none from their call.
  Deadline default_deadline() const noexcept { return Deadline::after(timeout()); }

  /// Returns true once the device is lost: work may still be running on it, and core refuses
  /// every later call with device_lost.
  bool lost() const noexcept { return lost_.load(std::memory_order_acquire); }
  /// Returns why the device was lost (empty while it is not).
  std::string lost_reason() const {
    std::lock_guard lock(lost_mutex_);
    return lost_reason_;
  }
  /// Marks the device lost (the first reason is kept). Called by a backend whose wait gave up
  /// with work still in flight, and by core when a backend reports device_lost.
  void mark_lost(const std::string& why) noexcept {
    std::lock_guard lock(lost_mutex_);
    if (lost_.load(std::memory_order_relaxed)) return;
    try {
      lost_reason_ = why;
    } catch (...) {  // out of memory for the text: the flag matters, the reason is a courtesy
    }
    lost_.store(true, std::memory_order_release);
  }

  /// Called once by core before any other call: the device's live counters, which the
  /// backend bumps for what only it sees (source compiles, L2/L3 hits).
  void attach_counters(Counters* counters) noexcept {
    counters_ = counters;
    if (counters_) on_counters_attached();
  }

 protected:
  /// Lets a backend add what it counted while opening (before core attached the counters).
  virtual void on_counters_attached() noexcept {}

  /// Returns the device's live counters (a private sink once core has detached them).
  Counters& counters() noexcept { return counters_ ? *counters_ : detached_; }

  /// Returns the settings of the runtime that opened the device.
  const BackendSettings& settings() const noexcept { return *settings_; }
  /// Returns the L2 store of the runtime that opened the device (KernelL2Entry takes it).
  cache::DiskStore& l2_store() const noexcept;

 private:
  std::shared_ptr<const BackendSettings> settings_;
  Counters* counters_ = nullptr;
  Counters detached_;  // backend objects can outlive the DeviceCore that owned the counters
  std::atomic<std::int64_t> timeout_ms_;
  std::atomic<bool> lost_{false};
  mutable std::mutex lost_mutex_;
  std::string lost_reason_;
};

}  // namespace vgpu
