// SPDX-License-Identifier: Apache-2.0
// core/runtime/device/device_core.hpp — the runtime state behind a Device handle: validation, counters,
// the L1 kernel cache, the call lock, and the handle states that keep backend objects alive.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <span>
#include <vector>

#include "device_host.hpp"
#include "lost_contents.hpp"
#include "vgpu/backend/device_impl.hpp"
#include "vgpu/backend/timing_clock.hpp"
#include "vgpu/cache/disk_store.hpp"
#include "vgpu/cache/kernel_key.hpp"
#include "vgpu/cache/memory_cache.hpp"
#include "vgpu/config.hpp"
#include "vgpu/counters.hpp"
#include "vgpu/device.hpp"

namespace vgpu {
class OpTuner;  // vgpu/backend/op_tuning.hpp
}  // namespace vgpu

namespace vgpu::detail {

struct VariantTable;  // variant_choice.hpp

// Each state holds its device's host first so it is destroyed last: backend objects
// (pipelines, allocations) must go before the device that made them, whatever order handles die
// in. A state's backend object is retired to the host, never destroyed in place: the host frees
// it once the work that may use it has completed (deferred destruction, device_host.hpp), so a
// handle may die on any thread, under any lock, without waiting.
// Recovery (DeviceCore::recover) moves every live state to the fresh host in place: it swaps in
// a new backend object and host and retires the old object to the old host. So `device` is the
// host the state's impl lives on now, and `owner` is what says which Device the state belongs
// to (the same for the Device's whole life, whatever hosts it has had).
// Thread-safety: a state is written while it is made and by recovery (which excludes every
// call on its device); read-only otherwise (a BatchState's commands and recorded form are
// guarded by its mutex, a BufferState's lost ranges by the device's call lock); its backend
// object is used only under the device's call lock.

/// Identifies one Device across its recoveries: what own() compares, and the description that
/// outlives each backend device (Device::info() returns a reference to it). Immutable.
struct DeviceIdentity {
  DeviceInfo info;
};

/// Hands object to host for deferred destruction (nothing when either is null); buffer_bytes:
/// a buffer allocation's size, counted as freed once it is (DeviceHost::retire).
inline void retire(const std::shared_ptr<DeviceHost>& host, std::unique_ptr<DeviceObject> object,
                   std::uint64_t buffer_bytes = 0) noexcept {
  if (host && object) host->retire(std::move(object), buffer_bytes);
}

/// Keeps the owner of imported host memory alive until the buffer over it is freed: retired
/// right after that buffer's object, so it goes only once the work that used the memory has.
struct ExternalOwner final : DeviceObject {
  explicit ExternalOwner(std::shared_ptr<void> o) noexcept : owner(std::move(o)) {}
  std::shared_ptr<void> owner;
};

struct BufferState {
  std::shared_ptr<DeviceHost> device;
  std::shared_ptr<const DeviceIdentity> owner;
  std::unique_ptr<BufferImpl> impl;
  std::uint64_t size = 0;
  bool internal = false;  // vgpu's own (PersistentKernel, QueuePipeline): rewritten by every call, never "lost"
  std::string label;      // Device::set_label's (call lock), given again to a recovered device's buffer
  LostContents lost;      // what a recovery lost and no write has covered since (call lock)
  // Memory used in place (DeviceCore::import_memory): its address, which a recovery imports
  // again (host memory outlives any device, so nothing is lost; device memory another library
  // owns is imported again if the fresh device still reaches it), and what keeps it alive.
  void* imported = nullptr;
  bool imported_device = false;  // the device API's memory (import_device), not host memory
  std::shared_ptr<void> external;
  ~BufferState() {
    retire(device, std::move(impl), imported ? 0 : size);
    if (external) retire(device, std::make_unique<ExternalOwner>(std::move(external)));
  }
};

struct KernelState {
  std::shared_ptr<DeviceHost> device;
  std::shared_ptr<const DeviceIdentity> owner;
  KernelSource source;    // kept for validating binds and dispatches: its declarations, or those reflected
  KernelSource compiled;  // the source as compile() got it (before reflection): what recovery compiles again
  CompileOptions options;
  cache::KernelKey key;
  std::unique_ptr<KernelImpl> impl;
  std::optional<KernelReflection> reflection;     // the backend's, copied so handles never touch impl
  std::array<std::uint32_t, 3> workgroup_size{};  // the local size it runs with
  ~KernelState() { retire(device, std::move(impl)); }
};

struct BindingSetState {
  std::shared_ptr<DeviceHost> device;
  std::shared_ptr<const DeviceIdentity> owner;
  std::shared_ptr<KernelState> kernel;
  std::vector<std::shared_ptr<BufferState>> by_slot;  // index = slot; null where unbound
  std::unique_ptr<BindingSetImpl> impl;
  ~BindingSetState() { retire(device, std::move(impl)); }
};

struct BatchCommand {
  std::shared_ptr<KernelState> kernel;
  std::shared_ptr<BindingSetState> bindings;
  ParamsBlock params;
  Groups groups;
};

struct BatchState {
  std::shared_ptr<DeviceHost> device;  // guarded by mutex (recovery replaces it)
  std::shared_ptr<const DeviceIdentity> owner;
  std::mutex mutex;  // guards device/commands/recorded between recording threads, submitters and recovery
  std::vector<BatchCommand> commands;
  std::unique_ptr<RecordedBatchImpl> recorded;  // null until first submit or after a change
  ~BatchState() { retire(device, std::move(recorded)); }
};

/// Validates one dispatch against the kernel's declarations and the device's limits.
void validate_dispatch(const DeviceInfo& info, const KernelState& kernel, const BindingSetState& bindings,
                       const ParamsBlock& params, const Groups& groups);

/// Owns one opened device: forwards validated calls to the backend, keeps counters and the
/// L1 cache, turns each call's time limit into the Deadline the backend waits against, and
/// recovers the device in place after a loss.
/// Recovery: once the backend device is lost (a backend call threw device_lost, a wait gave up
/// with work in flight, testing::force_device_lost), the next call on this DeviceCore first
/// opens a fresh backend device through reopen (Runtime's ComputeBackend::open of the same
/// index), rebuilds every live buffer, kernel (compiled again through the backend, so L2
/// answers), binding set and batch (re-recorded at its next submit) on it, counts
/// counters().recoveries, then runs. User buffers come back with their contents lost (reads
/// throw device_lost until writes cover them again); internal ones (create_buffer(bytes,
/// true)) do not. Reopening failing makes the call throw device_lost; a later call tries again.
/// Thread-safety: every member function is safe to call from several threads. Each call takes
/// the recovery lock shared, then (except compile() and create_batch()) the host's call lock,
/// so the backend sees one call at a time; recovery takes the recovery lock exclusively, so it
/// waits for calls and compiles in flight, and calls arriving meanwhile wait for it. compile()
/// takes no call lock (the L1 cache's single-flight build and DeviceImpl::compile run without
/// it), so a long compile does not hold up dispatches, and holding the recovery lock shared it
/// never lands on a host recovery has replaced. A call's time limit starts once it holds the
/// call lock. Dropping a handle never waits: its backend object is retired to the host.
class DeviceCore : public std::enable_shared_from_this<DeviceCore> {
 public:
  /// Opens a fresh backend device for the same id (ComputeBackend::open again); throws as open does.
  using Reopen = std::function<std::unique_ptr<DeviceImpl>()>;
  /// How soon after a recovery a further loss counts as a relapse (KernelDatabase demotes).
  static constexpr std::chrono::seconds kRelapseWindow{30};

  /// Wraps an opened backend device, with its runtime's L1 capacity, time limit and L2 store
  /// (null: cache::DiskStore::global()); reopen (may be empty: the device cannot recover) opens
  /// it again after a loss; op_tuner is how its backend runs the built-in ops (null: none).
  DeviceCore(std::unique_ptr<DeviceImpl> impl, const Config& config, Reopen reopen = {},
             std::shared_ptr<cache::DiskStore> store = nullptr, std::shared_ptr<const OpTuner> op_tuner = nullptr);
  ~DeviceCore();

  /// Returns a public handle to this device.
  Device handle() { return Device(shared_from_this()); }
  /// Returns the device's description (the same across recoveries).
  const DeviceInfo& info() const noexcept { return identity_->info; }
  /// Returns the live counters (they continue across recoveries).
  Counters& counters() noexcept { return *counters_; }
  /// Returns how its backend runs the built-in ops (ComputeBackend::op_tuner or the registry's
  /// rule when it was opened); null when it runs none.
  const std::shared_ptr<const OpTuner>& op_tuner() const noexcept { return op_tuner_; }
  /// Returns the opening runtime's L2 store (where measured variant choices persist too).
  cache::DiskStore& l2_store() const noexcept { return *store_; }
  /// Returns the opening runtime's bounds on a cache of live persistent kernels (KernelDatabase
  /// on this device, vgpu::run's pipelines on it).
  const PersistentLimits& persistent_limits() const noexcept { return persistent_limits_; }
  /// Returns the opening runtime's VGPU_TUNE: "measure" or "rules".
  const std::string& tune_mode() const noexcept { return tune_; }
  /// Returns this device's measured variant choices (variant_choice.hpp): a fresh runtime's
  /// device starts with none and reads them from its store.
  VariantTable& variant_table() noexcept { return *variants_; }
  /// Returns the device's one T (made on first use), a cache a higher part of the runtime keeps
  /// per device (arrays/prepared_ops.hpp: the array ops' compiled plans); one type per process.
  /// Freed with the device. Thread-safety: T guards itself.
  template <class T>
  T& attachment() {
    std::lock_guard lock(attachment_mutex_);  // (a leaf; std::call_once's helpers would be exported)
    if (!attachment_) attachment_ = std::make_shared<T>();
    return *static_cast<T*>(attachment_.get());
  }
  /// Returns the clock measurements of this device read (DeviceImpl::timing_clock()).
  const TimingClock& timing_clock() const noexcept { return clock_; }

  /// Allocates a buffer; internal marks one vgpu owns and rewrites on every use (PersistentKernel's,
  /// QueuePipeline's), whose contents a recovery never reports lost.
  Buffer create_buffer(std::uint64_t bytes, bool internal = false);
  /// Makes a buffer of bytes of memory at data, used in place — host memory
  /// (DeviceImpl::import_host) or, with device_memory, the device API's own memory another
  /// library allocated (DeviceImpl::import_device) — keeping owner alive until the buffer is
  /// freed; returns an empty handle when the backend cannot use that memory in place. Throws
  /// invalid_argument for a null or empty range (the caller checks the alignment its elements need).
  Buffer import_memory(void* data, std::uint64_t bytes, std::shared_ptr<void> owner, bool device_memory = false);
  /// Returns the native queue of the device (DeviceImpl::native_stream): a CUstream, or 0.
  std::uintptr_t native_stream() const noexcept {
    return current_impl_.load(std::memory_order_acquire)->native_stream();
  }
  /// Returns true when import_memory() uses host memory in place on this device (DeviceImpl::imports_host).
  bool imports_host() const noexcept { return current_impl_.load(std::memory_order_acquire)->imports_host(); }
  /// Returns where buffer's bytes are for code outside vgpu (DeviceImpl::address).
  BufferAddress address(const Buffer& buffer);
  /// Names buffer for debugging tools (Device::set_label).
  void set_label(const Buffer& buffer, const std::string& label);
  void write(const Buffer& buffer, const void* data, std::uint64_t bytes, std::uint64_t offset);
  void read(const Buffer& buffer, void* out, std::uint64_t bytes, std::uint64_t offset);
  void copy(const Buffer& src, const Buffer& dst, std::uint64_t bytes, std::uint64_t src_offset,
            std::uint64_t dst_offset);
  /// Compiles (L1, L2, L3 or the backend); a kernel declaring the SPIR-V capability of a feature
  /// whose truth test failed on this device is refused (vgpu/feature_check.hpp).
  Kernel compile(const KernelSource& source, const CompileOptions& options);
  /// compile() without the feature check: the feature probes' own kernels.
  Kernel compile_unchecked(const KernelSource& source, const CompileOptions& options);
  BindingSet bind(const Kernel& kernel, std::span<const Binding> bindings);
  void dispatch(const Kernel& kernel, const BindingSet& bindings, const ParamsBlock& params, Groups groups);
  Batch create_batch();
  void submit(const Batch& batch);
  void synchronize(std::chrono::milliseconds limit);
  void round_trip(std::span<const HostWrite> writes, const Batch& batch, std::span<const HostRead> reads,
                  std::chrono::milliseconds limit);

  /// Returns true when the backend times this device's dispatches on its own timer.
  bool can_time_dispatches() const noexcept {
    return current_impl_.load(std::memory_order_acquire)->can_time_dispatches();
  }
  /// Turns dispatch timing on or off (Device::set_device_timing); throws not_supported for on
  /// where can_time_dispatches() is false.
  void set_device_timing(bool on);
  /// Returns true while dispatch timing is on.
  bool device_timing() const noexcept { return times_->enabled(); }
  /// Returns the newest dispatch times measured, oldest first (Device::dispatch_times).
  std::vector<DispatchTime> dispatch_times() const { return times_->recent(); }

  /// Sets the limit of calls that bring none of their own; throws invalid_argument when negative.
  void set_timeout(std::chrono::milliseconds limit);
  /// Returns the limit of calls that bring none of their own (0: none).
  std::chrono::milliseconds timeout() const noexcept { return std::chrono::milliseconds(timeout_ms_.load()); }
  /// Returns true while the device is lost and not yet recovered (the next call recovers it).
  bool lost() const noexcept { return current_impl_.load(std::memory_order_acquire)->lost(); }
  /// Marks the device lost now (testing::force_device_lost, LossPoint::now).
  void force_lost(const std::string& why);
  /// Arms a simulated loss at the backend's next wait (testing::force_device_lost, LossPoint::next_wait).
  void inject_loss() noexcept { current_impl_.load(std::memory_order_acquire)->inject_loss(); }
  /// Returns how many recoveries followed a loss within kRelapseWindow of the previous recovery.
  std::uint64_t relapses() const noexcept { return relapses_.load(std::memory_order_relaxed); }

  /// Throws invalid_argument when this thread is inside a call on this device already (at any
  /// depth), or runs kernel code that such a call waits for (DeviceImpl::runs_kernel_of): what
  /// every call checks first, and what a caller that takes a lock of its own before calling
  /// (PersistentKernel, QueuePipeline) checks before that lock.
  void check_not_inside() const;

  /// Returns true when buffer is the only handle to its memory (no copy, no binding holds it).
  bool sole_handle(const Buffer& buffer) const noexcept { return buffer.state_ && buffer.state_.use_count() == 1; }

  /// Returns the state behind a handle after checking it belongs to this device.
  BufferState& own(const Buffer& buffer, const char* what) const;
  KernelState& own(const Kernel& kernel) const;
  BindingSetState& own(const BindingSet& bindings) const;
  BatchState& own(const Batch& batch) const;

 private:
  struct Rebuilt;
  // Runs f under the recovery lock (shared) and, with call_lock, the host's call lock, after
  // recovering the device when it is lost.
  template <class F>
  auto entered(bool call_lock, F&& f) -> decltype(f());
  // Returns true when this thread is inside a call on this core (entered), at any depth.
  bool inside_here() const noexcept;
  // Reopens the backend device and moves every live state to it (takes the recovery lock
  // exclusively; nothing when another thread recovered it first). Throws device_lost.
  void recover();
  // Builds the fresh device's objects for every live state (nothing is changed yet).
  void rebuild(DeviceImpl& fresh, Rebuilt& out);
  // Notes state so that recovery rebuilds it while it lives.
  template <class State>
  void enlist(std::vector<std::weak_ptr<State>>& list, const std::shared_ptr<State>& state);
  // Remembers when the loss was first seen (for the relapse window).
  void note_loss() noexcept;

  DeviceImpl& impl() const noexcept { return host_->impl(); }
  std::shared_ptr<KernelState> build_kernel(const KernelSource& source, const DialectSource& code,
                                            const CompileOptions& options, const cache::KernelKey& key);
  // Checks source and options against this device; returns the entry of source it compiles.
  const DialectSource& check_compilable(const KernelSource& source, const CompileOptions& options) const;
  // The checks of one host → buffer (buffer → host) copy: the buffer is this device's, the
  // range fits, the pointer is set; returns the buffer, or nullptr when bytes is 0.
  BufferState* checked_write(const Buffer& buffer, const void* data, std::uint64_t bytes, std::uint64_t offset,
                             const char* what) const;
  BufferState* checked_read(const Buffer& buffer, const void* out, std::uint64_t bytes, std::uint64_t offset,
                            const char* what) const;
  class TriedContents;
  // Throws device_lost when [offset, offset + bytes) of b is in lost (b's lost ranges, or a
  // tried copy of them).
  void check_contents(const BufferState& b, const LostContents& lost, std::uint64_t offset, std::uint64_t bytes,
                      const char* what) const;
  // Checks that the commands read no lost contents; a write-only slot counts as rewriting its
  // buffer: on tried's copies when given (before the commands run), else on the buffers
  // themselves (after). Call lock held.
  void check_commands(std::span<const BatchCommand> commands, TriedContents* tried);
  // check_commands for a round trip's writes, batch and reads, before it runs.
  void check_trip(std::span<const HostWrite> writes, const BatchState& s, std::span<const HostRead> reads);
  // Marks [offset, offset + bytes) of b written (call lock held).
  void cover(BufferState& b, std::uint64_t offset, std::uint64_t bytes);
  // Records batch's commands into s.recorded if that has not happened since the last change
  // (s.mutex and the call lock held).
  void record_locked(BatchState& s);
  // Runs a backend call: std::bad_alloc becomes out_of_memory, and a device_lost error marks
  // the device lost (its next call recovers it).
  template <class F>
  auto guarded(const char* what, F&& f) -> decltype(f());
  // Returns a deadline limit from now, after checking limit is not negative.
  static Deadline deadline_for(std::chrono::milliseconds limit, const char* call);

  std::shared_ptr<const DeviceIdentity> identity_;
  std::shared_ptr<Counters> counters_;
  std::shared_ptr<DispatchTimeLog> times_;   // shared with every host, as counters_ is
  std::shared_ptr<cache::DiskStore> store_;  // the runtime's (kept: the runtime may go first)
  std::shared_ptr<const OpTuner> op_tuner_;
  std::string tune_;
  std::unique_ptr<VariantTable> variants_;
  PersistentLimits persistent_limits_;
  Reopen reopen_;
  std::atomic<std::int64_t> timeout_ms_{0};
  mutable std::shared_mutex recovery_mutex_;  // shared: a call or compile; exclusive: recovery
  std::shared_ptr<DeviceHost> host_;          // replaced only under recovery_mutex_ held exclusively
  std::atomic<DeviceImpl*> current_impl_;     // &host_->impl(), readable without the recovery lock
  const TimingClock& clock_;                  // the first backend device's (the same for every one)
  std::size_t lost_buffers_ = 0;              // user buffers with lost contents, an upper bound (call lock)
  std::string loss_reason_;                   // why the last recovery was needed (call lock)
  std::atomic<std::uint64_t> relapses_{0};
  // The calls this thread is in, innermost first (a CPU kernel of one device may call another):
  // each entered() links one on its stack for the call's duration.
  struct Inside {
    const DeviceCore* core;
    const Inside* outer;
    explicit Inside(const DeviceCore* c) noexcept : core(c), outer(inside_) { inside_ = this; }
    ~Inside() { inside_ = outer; }
    Inside(const Inside&) = delete;
    Inside& operator=(const Inside&) = delete;
  };
  inline static thread_local const Inside* inside_ = nullptr;
  // A round trip's validated copies (round_trip), kept to reuse their capacity: guarded by the
  // call lock, so they belong to the one call on this device in flight.
  std::vector<HostWriteOp> trip_writes_;
  std::vector<HostReadOp> trip_reads_;
  std::chrono::steady_clock::time_point last_recovery_{};  // (recovery lock exclusive)
  std::atomic<std::int64_t> loss_seen_ns_{0};              // steady-clock ns of the first sign of the loss (0: none)
  std::mutex registry_mutex_;                              // guards the lists below (a leaf)
  std::vector<std::weak_ptr<BufferState>> buffers_;
  std::vector<std::weak_ptr<KernelState>> kernels_;
  std::vector<std::weak_ptr<BindingSetState>> binding_sets_;
  std::vector<std::weak_ptr<BatchState>> batches_;
  cache::MemoryCache<cache::KernelKey, std::shared_ptr<KernelState>, cache::KernelKeyHash> l1_;
  // Last: freed first, while everything it refers to still exists.
  std::mutex attachment_mutex_;
  std::shared_ptr<void> attachment_;
};

/// Reaches a public handle's DeviceCore from runtime code (testing.cpp, persistent_kernel.cpp,
/// kernel_database.cpp, queue_pipeline.cpp). Thread-safety: as DeviceCore.
struct DeviceAccess {
  /// Returns device's core; throws invalid_argument for an empty handle.
  static DeviceCore& core(const Device& device);
  /// Returns the clock measurements of device's work read; throws as core() does.
  static const TimingClock& clock(const Device& device) { return core(device).timing_clock(); }
  /// Allocates a buffer vgpu owns on device (DeviceCore::create_buffer(bytes, true)).
  static Buffer internal_buffer(const Device& device, std::uint64_t bytes) {
    return core(device).create_buffer(bytes, true);
  }
};

}  // namespace vgpu::detail
