// SPDX-License-Identifier: Apache-2.0
// vgpu/backend/device_impl.hpp — what a backend implements for one opened device.
// Backend-author interface: included by backends/*, fallback/* and core only, never by users.
// Core validates every argument (sizes, slots, params, groups) and keeps the counters before
// calling these, so implementations only do the work.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "vgpu/backend/deadline.hpp"
#include "vgpu/backend/dispatch_time_log.hpp"
#include "vgpu/backend/timing_clock.hpp"
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

/// What every backend object below is to core: something it frees once no handle uses it and
/// the work that last used it has completed (deferred destruction, DeviceImpl). Destructors
/// therefore free at once and never wait; core runs them under the device's call lock.
class DeviceObject {
 public:
  virtual ~DeviceObject() = default;
};

/// A backend's buffer allocation.
class BufferImpl : public DeviceObject {};

/// A backend's compiled kernel (pipeline, program, module function, CPU entry).
class KernelImpl : public DeviceObject {
 public:
  /// Returns the kernel's interface as reflected from its compiled form, or null when the backend does not reflect it.
  const KernelReflection* reflection() const { return reflected ? &*reflected : nullptr; }
  /// Set by backends that reflect complete shaders and SPIR-V (Vulkan, OpenGL), at the
  /// specialised local size; empty for the body form and for backends that do not reflect.
  std::optional<KernelReflection> reflected;
  /// The kernel's name (KernelSource::name), set by core once compile() returned: what the
  /// backend reports its dispatch times under (report_dispatch_time) and labels its dispatches
  /// with (backends name the compiled objects themselves, from the source, inside compile()).
  std::string name;
};

/// A backend object (Base: one of the *Impl classes above) that keeps the device that made it,
/// which its destructor frees it through. Thread-safety: as Base.
template <class Base, class Device>
class DeviceBound : public Base {
 public:
  explicit DeviceBound(Device& device) : device_(device) {}
  Device& device_;
};

/// A backend's binding of buffers to a kernel's slots (descriptor set, argument pack).
class BindingSetImpl : public DeviceObject {};

/// A backend's recorded batch (command buffer, CUDA graph), resubmittable.
class RecordedBatchImpl : public DeviceObject {};

/// Where a buffer's bytes are, as code outside vgpu can reach them (Array::data, DLPack).
struct BufferAddress {
  enum class Space {
    none,         ///< not addressable from outside the backend (Vulkan, OpenGL memory)
    host,         ///< ordinary host memory of this process (the CPU device)
    cuda_device,  ///< a CUDA device pointer in the device's primary context
  };
  void* ptr = nullptr;  ///< the first byte (a CUdeviceptr cast to a pointer for cuda_device)
  Space space = Space::none;
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
/// must give up there (fail_timeout); members without one (compile, create_buffer, release)
/// bound their waits by timeout(), and the destructors of a backend's objects never wait (see
/// below). A backend whose wait
/// gives up while work is still in flight calls mark_lost() first; core then refuses every
/// later call, and Runtime::open() opens a fresh device for the same id.
/// Thread-safety (docs/architecture.md, "Locking policy"): core serialises the calls on one
/// device: it holds the device's call lock around every member below, so an implementation is
/// single-threaded, with these exceptions, which may run concurrently with any member
/// (another compile included) and keep what they touch safe themselves:
///   - compile(): a long compile must not hold up dispatches (Vulkan guards its layout and
///     pipeline-cache state, OpenGL queues on its context's thread, CUDA and the CPU share no
///     state with other calls);
///   - info() and timing_clock(): immutable;
///   - timeout(), lost(), lost_reason(), mark_lost() and the counters: safe from any thread.
/// A backend's own threads (OpenGL's context thread) are the backend's to synchronise.
/// Waiting (read, synchronize, round_trip, a full staging ring) holds the lock, so later calls
/// on this device wait behind it — they would be ordered after it anyway — while other devices
/// never do; destroying an object never waits (see submitted_serial()).
/// Destruction is deferred: core frees a BufferImpl, KernelImpl, BindingSetImpl or
/// RecordedBatchImpl (under the lock) only once completed_serial() has reached the
/// submitted_serial() read when its last handle went, so destructors free without waiting.
class DeviceImpl {
 public:
  /// Starts with settings' timeout; settings are the opening runtime's (the backend got them
  /// from its factory), or, when null or left out, BackendSettings::process().
  explicit DeviceImpl(std::shared_ptr<const BackendSettings> settings = nullptr);
  virtual ~DeviceImpl() = default;
  /// Returns the device's description (stable for the device's lifetime).
  virtual const DeviceInfo& info() const = 0;
  /// Returns the clock measurements of this device's work read (vgpu/backend/timing_clock.hpp):
  /// the steady clock, unless the backend simulates its devices' cost. The same for every device
  /// the backend opens for this one, and never destroyed (core keeps it across recoveries).
  virtual const TimingClock& timing_clock() const noexcept { return TimingClock::steady(); }
  /// Allocates bytes (> 0, within limits); throws out_of_memory.
  virtual std::unique_ptr<BufferImpl> create_buffer(std::uint64_t bytes) = 0;
  /// Makes a buffer of the bytes at data in place, without copying (zero-copy): kernels read and
  /// write that memory itself. The memory is the caller's and outlives the buffer (core keeps
  /// its owner alive until the buffer is freed). data is aligned to at least 4 bytes and bytes
  /// is > 0. Returns null when the backend cannot use host memory in place (the default); core
  /// then copies instead or reports it, as its caller asked.
  /// A backend that imports must keep nothing of the memory past the buffer's life (no pinning
  /// it holds, no copies), and must accept that the memory may be freed while an imported
  /// buffer that no pending work uses still exists (a PersistentKernel keeps its last call's
  /// imports to reuse them when the next call passes the same addresses).
  virtual std::unique_ptr<BufferImpl> import_host(void* /*data*/, std::uint64_t /*bytes*/) { return nullptr; }
  /// Returns true when import_host() uses host memory in place (a CPU device), so callers can
  /// skip staging copies altogether; false (the default) when it returns null.
  virtual bool imports_host() const noexcept { return false; }
  /// Makes a buffer of bytes of this device's own API memory at ptr (a CUDA device pointer
  /// another library allocated in the same context), in place; the memory is the caller's.
  /// Returns null when the backend does not import such memory or ptr is not this device's
  /// (the default: null).
  virtual std::unique_ptr<BufferImpl> import_device(void* /*ptr*/, std::uint64_t /*bytes*/) { return nullptr; }
  /// Returns the native queue vgpu's work on this device runs on (a CUstream), for exchanges
  /// that order work across libraries (DLPack's stream argument); 0 where there is none.
  virtual std::uintptr_t native_stream() const noexcept { return 0; }
  /// Returns where buffer's first byte is, for code outside vgpu (none: not reachable; the default).
  virtual BufferAddress address(BufferImpl& /*buffer*/) { return {}; }
  /// Gives buffer a debug name that capture and profiling tools show (VK_EXT_debug_utils,
  /// GL_KHR_debug); the default, for APIs without object names, does nothing. Never fails a call.
  virtual void set_label(BufferImpl& /*buffer*/, const std::string& /*label*/) noexcept {}
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
  /// Returns the serial of the newest work submitted so far, counting work the backend has
  /// queued but not yet handed to the driver (it gets the next serial): an object whose last
  /// handle goes now is used by nothing newer. Serials only grow. The default (0, with
  /// completed_serial() always past it) suits a backend whose calls finish their work before
  /// returning, or whose driver keeps deleted objects alive while queued work uses them (GL).
  virtual std::uint64_t submitted_serial() noexcept { return 0; }
  /// Returns a serial up to which every submitted work has finished, polling without waiting
  /// (on a lost device it may never grow: its objects then wait for release()).
  virtual std::uint64_t completed_serial() noexcept { return UINT64_MAX; }
  /// Called by core once no handle uses the device any more, before the objects still waiting
  /// for their work are freed and the device is deleted: finishes (within timeout()) or gives
  /// up outstanding work. Returns false when work the driver still runs uses this object's
  /// memory; vgpu then leaks the device and those objects (the backend logs why) rather than
  /// free what the driver still touches. The default has nothing to wait for.
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

  /// Returns true once the device is lost: work may still be running on it, and core replaces
  /// it (recovery) before the next call.
  bool lost() const noexcept { return lost_.load(std::memory_order_acquire); }
  /// Returns why the device was lost (empty while it is not).
  std::string lost_reason() const {
    std::lock_guard lock(lost_mutex_);
    return lost_reason_;
  }
  /// Marks the device lost (the first reason is kept) and counts it (counters' device_losses:
  /// this is the one place a loss is counted). Called by a backend whose wait gave up with work
  /// still in flight, by core when a backend reports device_lost, and by the test hook.
  void mark_lost(const std::string& why) noexcept {
    std::lock_guard lock(lost_mutex_);
    if (lost_.load(std::memory_order_relaxed)) return;
    try {
      lost_reason_ = why;
    } catch (...) {  // out of memory for the text: the flag matters, the reason is a courtesy
    }
    lost_.store(true, std::memory_order_release);
    counters().device_losses.fetch_add(1, std::memory_order_relaxed);
  }

  /// Test hook (vgpu::testing::force_device_lost with LossPoint::next_wait): arms a simulated
  /// loss that the backend's next wait for submitted work (submit of a synchronous backend,
  /// synchronize, a read, round_trip) reports exactly as its API reports a real one — Vulkan as
  /// VK_ERROR_DEVICE_LOST, CUDA as a sticky CUDA_ERROR_ILLEGAL_ADDRESS, OpenGL as a context
  /// reset, the CPU as a failed workgroup — so the backend's own detection path runs. Any thread.
  void inject_loss() noexcept { injected_loss_.store(true, std::memory_order_release); }
  /// Returns true once, when a simulated loss is armed (the backend then reports the loss);
  /// backends call it in their wait paths. Any thread.
  bool take_injected_loss() noexcept { return injected_loss_.exchange(false, std::memory_order_acq_rel); }

  /// Marks the calling thread as running this device's kernel code (a CPU workgroup) while it
  /// lives: core refuses a call on the device from there (it holds the device's call lock for
  /// the dispatch, so the call would wait for itself) with invalid_argument. Scopes form a tree
  /// across threads: each names the scope the dispatch was made under (parent: the dispatching
  /// thread's current() when the dispatch began, which lives while the dispatch runs), so a
  /// workgroup on a pool thread, running a kernel that a kernel of device A dispatched on device
  /// B, is refused calls on A as well as on B (A's call waits for it). Nests on one thread.
  class KernelScope {
   public:
    /// Enters device's kernel code under this thread's current scope (the dispatching thread itself).
    explicit KernelScope(const DeviceImpl& device) noexcept : KernelScope(device, current_) {}
    /// Enters device's kernel code dispatched under parent (a pool thread running a workgroup).
    KernelScope(const DeviceImpl& device, const KernelScope* parent) noexcept
        : device_(&device), parent_(parent), saved_(current_) {
      current_ = this;
    }
    ~KernelScope() { current_ = saved_; }
    KernelScope(const KernelScope&) = delete;
    KernelScope& operator=(const KernelScope&) = delete;

    /// Returns the calling thread's innermost scope (null: it runs no kernel code).
    static const KernelScope* current() noexcept { return current_; }

   private:
    friend class DeviceImpl;
    const DeviceImpl* device_;
    const KernelScope* parent_;  // the scope the dispatch was made under (another thread's, maybe)
    const KernelScope* saved_;   // this thread's scope before this one (restored on exit)
    inline static thread_local const KernelScope* current_ = nullptr;
  };
  /// Returns true when the calling thread runs kernel code of device, or kernel code that a
  /// kernel of device dispatched (at any depth, on any thread): a call on device from here
  /// would wait for itself.
  static bool runs_kernel_of(const DeviceImpl* device) noexcept {
    for (const KernelScope* s = KernelScope::current(); s; s = s->parent_)
      if (s->device_ == device) return true;
    return false;
  }

  /// Called once by core before any other call: the device's live counters, which the
  /// backend bumps for what only it sees (source compiles, L2/L3 hits).
  void attach_counters(Counters* counters) noexcept {
    counters_ = counters;
    if (counters_) on_counters_attached();
  }

  /// Returns true when the backend can time this device's dispatches with the device's own
  /// timer (report_dispatch_time); false (the default) where its API offers none.
  virtual bool can_time_dispatches() const noexcept { return false; }
  /// Called once by core before any other call: the log whose switch says whether to time
  /// dispatches and which keeps what report_dispatch_time reports (core's, across recoveries).
  void attach_time_log(DispatchTimeLog* log) noexcept { time_log_ = log; }

 protected:
  /// Lets a backend add what it counted while opening (before core attached the counters).
  virtual void on_counters_attached() noexcept {}

  /// Lets the device's work finish before its objects are freed (release(), the destructor):
  /// runs drain, which waits within the deadline it gets (timeout() from now) and returns
  /// whether the work finished. When it did not, or threw, the device is marked lost and
  /// abandoned for good: one warning says that `left` (e.g. "memory, modules and stream") of
  /// the `api` device is left to the driver, and this and every later call return false, so
  /// the backend leaks rather than frees what running work may still use.
  bool settle(std::string_view api, std::string_view left, const std::function<bool(const Deadline&)>& drain) noexcept;
  /// Returns true once settle() gave up on the device's work.
  bool abandoned() const noexcept { return abandoned_; }

  /// Returns the device's live counters (a private sink once core has detached them).
  Counters& counters() noexcept { return counters_ ? *counters_ : detached_; }

  /// Returns true when work recorded or submitted now should be timed (Device::set_device_timing;
  /// core turns it on only where can_time_dispatches()). Any thread.
  bool timing_dispatches() const noexcept { return time_log_ && time_log_->enabled(); }
  /// Reports one finished dispatch of kernel (KernelImpl::name) that ran from begin_ns to end_ns
  /// on the device's timer: counted (timed_dispatches, device_ns) and kept for
  /// Device::dispatch_times(). An end before its begin (a timer that wrapped) is reported as
  /// taking no time. Any thread; never throws.
  void report_dispatch_time(const std::string& kernel, std::uint64_t begin_ns, std::uint64_t end_ns) noexcept;

  /// Returns the settings of the runtime that opened the device.
  const BackendSettings& settings() const noexcept { return *settings_; }
  /// Returns the L2 store of the runtime that opened the device (KernelL2Entry takes it).
  cache::DiskStore& l2_store() const noexcept;

 private:
  std::shared_ptr<const BackendSettings> settings_;
  Counters* counters_ = nullptr;
  DispatchTimeLog* time_log_ = nullptr;  // core's; the device's host holds it, as it holds the counters
  Counters detached_;                    // backend objects can outlive the DeviceCore that owned the counters
  std::atomic<std::int64_t> timeout_ms_;
  std::atomic<bool> lost_{false};
  std::atomic<bool> injected_loss_{false};
  mutable std::mutex lost_mutex_;
  bool abandoned_ = false;  // settle() gave up: work outlived a bounded wait (call lock or destructor only)
  std::string lost_reason_;
};

/// Declares, inside a backend's DeviceImpl subclass, the override of every pure DeviceImpl
/// member but info(): the signatures are written once, here, and each backend documents how it
/// does each call where it defines it (its .cpp) and in its class comment.
#define VGPU_DEVICE_IMPL_OVERRIDES                                                                                   \
  std::unique_ptr<::vgpu::BufferImpl> create_buffer(std::uint64_t bytes) override;                                   \
  void write(::vgpu::BufferImpl& buffer, std::uint64_t offset, const void* data, std::uint64_t bytes,                \
             const ::vgpu::Deadline& deadline) override;                                                             \
  void read(::vgpu::BufferImpl& buffer, std::uint64_t offset, void* out, std::uint64_t bytes,                        \
            const ::vgpu::Deadline& deadline) override;                                                              \
  void copy(::vgpu::BufferImpl& src, std::uint64_t src_offset, ::vgpu::BufferImpl& dst, std::uint64_t dst_offset,    \
            std::uint64_t bytes, const ::vgpu::Deadline& deadline) override;                                         \
  std::unique_ptr<::vgpu::KernelImpl> compile(const ::vgpu::KernelSource& source, const ::vgpu::DialectSource& code, \
                                              const ::vgpu::CompileOptions& options) override;                       \
  std::unique_ptr<::vgpu::BindingSetImpl> bind(::vgpu::KernelImpl& kernel,                                           \
                                               std::span<::vgpu::BufferImpl* const> by_slot) override;               \
  std::unique_ptr<::vgpu::RecordedBatchImpl> record(std::span<const ::vgpu::DispatchCommand> commands) override;     \
  void submit(::vgpu::RecordedBatchImpl& batch, const ::vgpu::Deadline& deadline) override;                          \
  void synchronize(const ::vgpu::Deadline& deadline) override

}  // namespace vgpu
