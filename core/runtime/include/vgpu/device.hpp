// SPDX-License-Identifier: Apache-2.0
// vgpu/device.hpp — one opened device: buffers, kernels, bindings, dispatch and batches.
#pragma once

#include "vgpu/export.hpp"

#include <array>
#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <vector>

#include "vgpu/counters.hpp"
#include "vgpu/dispatch_time.hpp"
#include "vgpu/device_info.hpp"
#include "vgpu/kernel_source.hpp"
#include "vgpu/params.hpp"

namespace vgpu {

namespace detail {
class DeviceCore;
struct DeviceAccess;
struct BufferState;
struct KernelState;
struct BindingSetState;
struct BatchState;
}  // namespace detail

/// A device memory allocation. A shared handle: copies refer to the same memory, which is
/// freed once the last handle has gone and the work submitted before that has finished
/// (dropping the last handle never waits for the device). Thread-safety: the handle may be
/// copied between threads; concurrent writes to the same bytes are the caller's race, as with
/// any memory.
class VGPU_API Buffer {
 public:
  Buffer() = default;
  /// Returns the size in bytes (0 for an empty handle).
  std::uint64_t size() const noexcept;
  /// Returns true when the handle refers to memory.
  explicit operator bool() const noexcept { return static_cast<bool>(state_); }
  /// Returns true when both handles refer to the same allocation.
  friend bool operator==(const Buffer& a, const Buffer& b) noexcept { return a.state_ == b.state_; }

 private:
  friend class detail::DeviceCore;
  explicit Buffer(std::shared_ptr<detail::BufferState> s) : state_(std::move(s)) {}
  std::shared_ptr<detail::BufferState> state_;
};

/// A compiled kernel, ready to dispatch on the device that compiled it. A shared handle.
/// Thread-safety: immutable; dispatch it from any thread.
class VGPU_API Kernel {
 public:
  Kernel() = default;
  /// Returns the source's name.
  const std::string& name() const;
  /// Returns the cache key (hex) this kernel was compiled under.
  std::string key_hex() const;
  /// Returns the kernel's interface as its backend reflected it from the compiled form
  /// (bindings, push-constant size, local size, specialization constants), or null when the
  /// backend does not reflect (CUDA, CPU). Valid while a handle to the kernel lives.
  const KernelReflection* reflection() const;
  /// Returns the local size the kernel runs with: the reflected one when the backend reflects,
  /// else CompileOptions::workgroup_size, or its default when that was left unset. Divide the
  /// problem size by it to get group counts.
  std::array<std::uint32_t, 3> workgroup_size() const;
  /// Returns the binding declarations dispatches are checked against: KernelSource::bindings,
  /// or, when those were left empty and the backend reflects, the ones derived from reflection.
  const std::vector<BindingDecl>& bindings() const;
  /// Returns the params bytes every dispatch must pass (KernelSource::params_size, or the
  /// reflected push-constant block's size when that was left 0).
  std::uint32_t params_size() const;
  /// Returns true when the handle refers to a kernel.
  explicit operator bool() const noexcept { return static_cast<bool>(state_); }

 private:
  friend class detail::DeviceCore;
  friend class Batch;
  explicit Kernel(std::shared_ptr<detail::KernelState> s) : state_(std::move(s)) {}
  std::shared_ptr<detail::KernelState> state_;
};

/// One buffer at one binding slot.
struct VGPU_API Binding {
  std::uint32_t slot = 0;
  Buffer buffer;
};

/// Buffers bound to a kernel's slots, created once and reused by every dispatch (a Vulkan
/// descriptor set, a CUDA argument pack). Thread-safety: immutable; share freely.
class VGPU_API BindingSet {
 public:
  BindingSet() = default;
  /// Returns true when the handle refers to a binding set.
  explicit operator bool() const noexcept { return static_cast<bool>(state_); }

 private:
  friend class detail::DeviceCore;
  friend class Batch;
  explicit BindingSet(std::shared_ptr<detail::BindingSetState> s) : state_(std::move(s)) {}
  std::shared_ptr<detail::BindingSetState> state_;
};

/// A recorded list of dispatches submitted with one submit and one wait. Each dispatch sees
/// the writes of the ones before it. A batch can be submitted again after new data is
/// written to its buffers, without being recorded again (Vulkan command buffer, CUDA graph).
/// Thread-safety: not safe to record into from two threads at once; submit from any thread.
class VGPU_API Batch {
 public:
  Batch() = default;
  /// Appends one dispatch; validated like Device::dispatch; throws invalid_argument.
  void dispatch(const Kernel& kernel, const BindingSet& bindings, const ParamsBlock& params, Groups groups);
  /// Returns the number of recorded dispatches.
  std::size_t size() const noexcept;
  /// Removes every recorded dispatch.
  void clear();
  /// Returns true when the handle refers to a batch.
  explicit operator bool() const noexcept { return static_cast<bool>(state_); }

 private:
  friend class detail::DeviceCore;
  explicit Batch(std::shared_ptr<detail::BatchState> s) : state_(std::move(s)) {}
  std::shared_ptr<detail::BatchState> state_;
};

/// One host → buffer copy of Device::round_trip.
struct VGPU_API HostWrite {
  Buffer buffer;
  const void* data = nullptr;
  std::uint64_t bytes = 0;
  std::uint64_t offset = 0;
};

/// One buffer → host copy of Device::round_trip.
struct VGPU_API HostRead {
  Buffer buffer;
  void* out = nullptr;
  std::uint64_t bytes = 0;
  std::uint64_t offset = 0;
};

/// An opened device. A shared handle to the device's runtime state; the device closes when
/// the last handle (and every buffer/kernel from it) goes.
/// Operations on one device take effect in call order: a read waits for the dispatches
/// submitted before it, a write never races a dispatch submitted before it.
///
/// Time limits: no call waits for the device without a limit. Each call that may wait (write,
/// read, copy, dispatch, submit, synchronize, round_trip; on OpenGL every call, as they queue
/// behind earlier work on the context's thread) gives up once its limit has passed since it
/// started (since it got the device, when calls from other threads came first): its own where
/// it takes one (synchronize, round_trip, PersistentKernel's call),
/// else the device's (set_timeout), which starts as VGPU_TIMEOUT_MS (default 60000 ms;
/// 0 = no limit). A call that gives up throws ErrorCategory::timeout. Then either nothing of
/// its work is still running and the device stays usable (CPU: no further workgroup starts;
/// the call's outputs are incomplete), or work is still in flight and the device is lost
/// (Vulkan, OpenGL, CUDA). A backend that reports device_lost for any other reason marks the
/// device lost the same way.
///
/// Device loss and recovery: a Device survives the loss of its device. The call that was in
/// flight when the loss struck throws device_lost (or timeout); lost() is true until the NEXT
/// call on this Device (any call, on any handle of it), which first recovers it in place: it
/// opens a fresh backend device for the same id, rebuilds every live Buffer (reallocated),
/// Kernel (compiled again through the L1/L2 cache: counters() shows l2_hits, not
/// source_compiles, where L2 holds it), BindingSet and Batch on it, adds 1 to
/// counters().recoveries, then proceeds. Counters continue across recoveries (device_losses
/// counts the losses). A Buffer whose data lived on the lost device has lost it: reading it,
/// copying from it, or dispatching it at a read or read_write slot throws device_lost ("Fix:
/// write the data again") until writes have covered it again (binding it at a write-only slot
/// counts as rewriting it); what vgpu owns (PersistentKernel's buffers) is rewritten by every
/// call and never raises that. If opening the device again fails, the call throws device_lost
/// with the reason, and the next call tries again. Runtime::open() of the id returns this same
/// Device. testing::force_device_lost (vgpu/testing.hpp) simulates a loss for tests.
/// Thread-safety: every member function is safe to call from several threads at once. Calls on
/// one device run one at a time, in the order they get the device: a call that waits for it
/// (a read, synchronize) holds up later calls on the same device, never another device's.
/// compile() runs beside them, so a long compile never holds up dispatches. Dropping a handle
/// (Buffer, Kernel, BindingSet, Batch) never waits: what it owns is freed once the work that
/// uses it has finished. A CPU kernel must not call the device it runs on (that throws
/// invalid_argument rather than wait for itself).
class VGPU_API Device {
 public:
  Device() = default;

  /// Returns the device's description, fingerprint included.
  const DeviceInfo& info() const;
  /// Returns a copy of this device's counters.
  CounterSnapshot counters() const;

  /// Allocates bytes of device memory; throws invalid_argument for 0, out_of_memory when full.
  Buffer create_buffer(std::uint64_t bytes);
  /// Copies bytes from host data into buffer at offset.
  void write(const Buffer& buffer, const void* data, std::uint64_t bytes, std::uint64_t offset = 0);
  /// Copies bytes from buffer at offset into host out, after earlier work finishes.
  void read(const Buffer& buffer, void* out, std::uint64_t bytes, std::uint64_t offset = 0);
  /// Copies bytes between two buffers of this device.
  void copy(const Buffer& src, const Buffer& dst, std::uint64_t bytes, std::uint64_t src_offset = 0,
            std::uint64_t dst_offset = 0);

  /// Compiles source for this device through the in-RAM cache (L1); throws compile_error
  /// with the compiler's log, not_supported when the source lacks this backend's dialect.
  Kernel compile(const KernelSource& source, const CompileOptions& options = {});
  /// Binds buffers to the kernel's declared slots; every declared slot must be bound.
  BindingSet bind(const Kernel& kernel, std::span<const Binding> bindings);
  /// Binds buffers to the kernel's declared slots (initializer-list form).
  BindingSet bind(const Kernel& kernel, std::initializer_list<Binding> bindings) {
    return bind(kernel, std::span<const Binding>(bindings.begin(), bindings.size()));
  }

  /// Runs one dispatch after validating params size, group counts and buffer sizes.
  void dispatch(const Kernel& kernel, const BindingSet& bindings, const ParamsBlock& params, Groups groups);
  /// Returns an empty batch to record dispatches into.
  Batch create_batch();
  /// Submits every dispatch of batch in order (one submit, one wait at the next sync point).
  void submit(const Batch& batch);
  /// Waits until every submitted dispatch has finished, for at most timeout(); throws timeout.
  void synchronize();
  /// Waits until every submitted dispatch has finished, for at most limit (0: no limit);
  /// throws timeout when it passes, invalid_argument for a negative limit.
  void synchronize(std::chrono::milliseconds limit);
  /// Writes, submits batch, then reads (waiting for it): the same checks, effects and counters
  /// as the separate calls, in one call a backend may fuse (CUDA replays a repeated round trip
  /// as one graph). PersistentKernel calls this. Gives up after timeout() (throws timeout).
  void round_trip(std::span<const HostWrite> writes, const Batch& batch, std::span<const HostRead> reads);
  /// round_trip() that gives up once limit has passed since the call started (0: no limit);
  /// throws timeout then, invalid_argument for a negative limit.
  void round_trip(std::span<const HostWrite> writes, const Batch& batch, std::span<const HostRead> reads,
                  std::chrono::milliseconds limit);

  /// Sets the limit of every call on this device that brings none of its own (0: no limit),
  /// for every handle of it; throws invalid_argument for a negative limit.
  void set_timeout(std::chrono::milliseconds limit);
  /// Returns the limit of calls that bring none of their own (VGPU_TIMEOUT_MS until set).
  std::chrono::milliseconds timeout() const;
  /// Returns true while the device is lost (a wait gave up with work still running, the
  /// driver reported it lost, or a test forced it) and not yet recovered: the next call on it
  /// recovers it first (see "Device loss and recovery" above).
  bool lost() const;

  /// Names buffer in capture and profiling tools (RenderDoc, Nsight, apitrace: a Vulkan debug-utils
  /// object name, an OpenGL GL_KHR_debug label; CUDA has no buffer names), kept across recoveries;
  /// throws invalid_argument for a buffer of another device. Kernels are named after
  /// KernelSource::name and each dispatch is labelled with it (a Vulkan debug-utils label, an
  /// OpenGL debug group, an NVTX range on CUDA while a profiler that collects NVTX is attached).
  void set_label(const Buffer& buffer, const std::string& label);
  /// Returns true when this device's dispatches can be timed by the device's own timer (Vulkan
  /// timestamp queries, CUDA events, OpenGL timer queries, the CPU's steady clock).
  bool can_time_dispatches() const;
  /// Turns timing of dispatches recorded or submitted from now on on or off, for every handle of
  /// this device (VGPU_DEVICE_TIMING=1 turns it on for every device that can time). Timed
  /// dispatches add to counters().timed_dispatches and device_ns and appear in dispatch_times()
  /// once they have finished and a later call has read their time (the wait that saw them
  /// finish). Costs a little per dispatch (two timer writes; CUDA also replays no graphs while
  /// on). Throws not_supported for on where can_time_dispatches() is false.
  void set_device_timing(bool on);
  /// Returns true while dispatch timing is on.
  bool device_timing() const;
  /// Returns the device times of the newest timed dispatches that have finished (at most
  /// kDispatchTimesKept),
  /// oldest first; they continue across recoveries. Times of work that was still running when the
  /// device was lost are never reported. A batch submitted again before its previous run
  /// finished reports one run's time on Vulkan (its timer slots are shared).
  std::vector<DispatchTime> dispatch_times() const;

  /// Returns the native queue vgpu's work on this device runs on — a CUstream on CUDA, 0 on
  /// the other backends — for libraries that order their work with vgpu's (DLPack's stream).
  std::uintptr_t native_stream() const;
  /// Returns true when the handle refers to an open device.
  explicit operator bool() const noexcept { return static_cast<bool>(core_); }
  /// Returns true when both handles refer to the same opened device.
  friend bool operator==(const Device& a, const Device& b) noexcept { return a.core_ == b.core_; }

 private:
  friend class detail::DeviceCore;
  friend struct detail::DeviceAccess;
  friend class Runtime;
  explicit Device(std::shared_ptr<detail::DeviceCore> core) : core_(std::move(core)) {}
  std::shared_ptr<detail::DeviceCore> core_;
};

}  // namespace vgpu
