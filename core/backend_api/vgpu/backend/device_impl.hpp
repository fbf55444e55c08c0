// vgpu/backend/device_impl.hpp — what a backend implements for one opened device.
// Backend-author interface: included by backends/*, fallback/* and core only, never by users.
// Core validates every argument (sizes, slots, params, groups) and keeps the counters before
// calling these, so implementations only do the work.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "vgpu/counters.hpp"
#include "vgpu/device_info.hpp"
#include "vgpu/kernel_source.hpp"
#include "vgpu/params.hpp"

namespace vgpu {

/// The source dialect a backend consumes.
enum class Dialect { glsl, cuda, cpu };

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
/// Thread-safety: core calls every member from any thread, possibly concurrently, except
/// that calls on one BufferImpl/RecordedBatchImpl are ordered by the caller's own ordering.
/// Implementations must be safe under that contract.
class DeviceImpl {
 public:
  virtual ~DeviceImpl() = default;
  /// Returns the device's description (stable for the device's lifetime).
  virtual const DeviceInfo& info() const = 0;
  /// Returns the dialect this backend compiles.
  virtual Dialect dialect() const noexcept = 0;
  /// Allocates bytes (> 0, within limits); throws out_of_memory.
  virtual std::unique_ptr<BufferImpl> create_buffer(std::uint64_t bytes) = 0;
  /// Copies host data into the buffer after earlier submitted work that may use it.
  virtual void write(BufferImpl& buffer, std::uint64_t offset, const void* data, std::uint64_t bytes) = 0;
  /// Copies buffer bytes to host memory after earlier submitted work finishes.
  virtual void read(BufferImpl& buffer, std::uint64_t offset, void* out, std::uint64_t bytes) = 0;
  /// Copies between buffers in submission order.
  virtual void copy(BufferImpl& src, std::uint64_t src_offset, BufferImpl& dst, std::uint64_t dst_offset,
                    std::uint64_t bytes) = 0;
  /// Compiles source (which has this backend's dialect); throws compile_error with the log.
  virtual std::unique_ptr<KernelImpl> compile(const KernelSource& source, const CompileOptions& options) = 0;
  /// Binds buffers by slot (by_slot[slot], null where the kernel declares no such slot).
  virtual std::unique_ptr<BindingSetImpl> bind(KernelImpl& kernel, std::span<BufferImpl* const> by_slot) = 0;
  /// Records commands into a resubmittable batch.
  virtual std::unique_ptr<RecordedBatchImpl> record(std::span<const DispatchCommand> commands) = 0;
  /// Submits a recorded batch; may return before it finishes.
  virtual void submit(RecordedBatchImpl& batch) = 0;
  /// Waits for every submitted batch.
  virtual void synchronize() = 0;
  /// Writes, submits batch (when not null), then reads, waiting for the reads; returns with
  /// every out filled. The default makes the separate calls; a backend may fuse them (CUDA
  /// replays a repeated round trip as one graph).
  virtual void round_trip(std::span<const HostWriteOp> writes, RecordedBatchImpl* batch,
                          std::span<const HostReadOp> reads) {
    for (const HostWriteOp& w : writes) write(*w.buffer, w.offset, w.data, w.bytes);
    if (batch) submit(*batch);
    for (const HostReadOp& r : reads) read(*r.buffer, r.offset, r.out, r.bytes);
  }
  /// Submits a one-off batch the backend now owns (Device::dispatch); the default submits it
  /// and lets it go, backends that run asynchronously keep it alive until it has run.
  virtual void submit_owned(std::unique_ptr<RecordedBatchImpl> batch) { submit(*batch); }

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

 private:
  Counters* counters_ = nullptr;
  Counters detached_;  // backend objects can outlive the DeviceCore that owned the counters
};

}  // namespace vgpu
