// core/src/device_core.hpp — the runtime state behind a Device handle: validation, counters,
// the L1 kernel cache, the call lock, and the handle states that keep backend objects alive.
#pragma once

#include <array>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <vector>

#include "device_host.hpp"
#include "vgpu/backend/device_impl.hpp"
#include "vgpu/cache/kernel_key.hpp"
#include "vgpu/cache/memory_cache.hpp"
#include "vgpu/config.hpp"
#include "vgpu/counters.hpp"
#include "vgpu/device.hpp"

namespace vgpu::detail {

// Each state holds its device's host first so it is destroyed last: backend objects
// (pipelines, allocations) must go before the device that made them, whatever order handles die
// in. A state's backend object is retired to the host, never destroyed in place: the host frees
// it once the work that may use it has completed (deferred destruction, device_host.hpp), so a
// handle may die on any thread, under any lock, without waiting.
// Thread-safety: a state is written while it is made and read-only after (a BatchState's
// commands and recorded form are guarded by its mutex); its backend object is used only under
// the device's call lock.

/// Hands object to host for deferred destruction (nothing when either is null).
inline void retire(const std::shared_ptr<DeviceHost>& host, std::unique_ptr<DeviceObject> object) noexcept {
  if (host && object) host->retire(std::move(object));
}

struct BufferState {
  std::shared_ptr<DeviceHost> device;
  std::unique_ptr<BufferImpl> impl;
  std::uint64_t size = 0;
  ~BufferState() { retire(device, std::move(impl)); }
};

struct KernelState {
  std::shared_ptr<DeviceHost> device;
  KernelSource source;  // kept for validating binds and dispatches: its declarations, or those reflected
  CompileOptions options;
  cache::KernelKey key;
  std::unique_ptr<KernelImpl> impl;
  std::optional<KernelReflection> reflection;   // the backend's, copied so handles never touch impl
  std::array<std::uint32_t, 3> workgroup_size{};  // the local size it runs with
  ~KernelState() { retire(device, std::move(impl)); }
};

struct BindingSetState {
  std::shared_ptr<DeviceHost> device;
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
  std::shared_ptr<DeviceHost> device;
  std::mutex mutex;  // guards commands/recorded between recording threads and submitters
  std::vector<BatchCommand> commands;
  std::unique_ptr<RecordedBatchImpl> recorded;  // null until first submit or after a change
  ~BatchState() { retire(device, std::move(recorded)); }
};

/// Validates one dispatch against the kernel's declarations and the device's limits.
void validate_dispatch(const DeviceInfo& info, const KernelState& kernel, const BindingSetState& bindings,
                       const ParamsBlock& params, const Groups& groups);

/// Owns one opened device: forwards validated calls to the backend, keeps counters and the
/// L1 cache, turns each call's time limit into the Deadline the backend waits against, and
/// refuses every call once the backend has marked the device lost.
/// Thread-safety: every member function is safe to call from several threads. Each call that
/// reaches the backend holds the device's call lock (DeviceHost::lock) throughout, so the
/// backend sees one call at a time — except compile(), which takes no lock of its own (the L1
/// cache's single-flight build and DeviceImpl::compile run without it), so a long compile does
/// not hold up dispatches. A call's time limit starts once it holds the lock. Dropping a handle
/// never waits: its backend object is retired to the host.
class DeviceCore : public std::enable_shared_from_this<DeviceCore> {
 public:
  /// Wraps an opened backend device, with its runtime's L1 capacity and time limit.
  DeviceCore(std::unique_ptr<DeviceImpl> impl, const Config& config);
  ~DeviceCore();

  /// Returns a public handle to this device.
  Device handle() { return Device(shared_from_this()); }
  /// Returns the backend device's description.
  const DeviceInfo& info() const { return impl_.info(); }
  /// Returns the live counters.
  Counters& counters() { return host_->counters(); }

  Buffer create_buffer(std::uint64_t bytes);
  void write(const Buffer& buffer, const void* data, std::uint64_t bytes, std::uint64_t offset);
  void read(const Buffer& buffer, void* out, std::uint64_t bytes, std::uint64_t offset);
  void copy(const Buffer& src, const Buffer& dst, std::uint64_t bytes, std::uint64_t src_offset,
            std::uint64_t dst_offset);
  Kernel compile(const KernelSource& source, const CompileOptions& options);
  BindingSet bind(const Kernel& kernel, std::span<const Binding> bindings);
  void dispatch(const Kernel& kernel, const BindingSet& bindings, const ParamsBlock& params, Groups groups);
  Batch create_batch();
  void submit(const Batch& batch);
  void synchronize(std::chrono::milliseconds limit);
  void round_trip(std::span<const HostWrite> writes, const Batch& batch, std::span<const HostRead> reads,
                  std::chrono::milliseconds limit);

  /// Sets the limit of calls that bring none of their own; throws invalid_argument when negative.
  void set_timeout(std::chrono::milliseconds limit);
  /// Returns the limit of calls that bring none of their own (0: none).
  std::chrono::milliseconds timeout() const noexcept { return impl_.timeout(); }
  /// Returns true once the backend marked the device lost.
  bool lost() const noexcept { return impl_.lost(); }

  /// Returns the state behind a handle after checking it belongs to this device.
  BufferState& own(const Buffer& buffer, const char* what) const;
  KernelState& own(const Kernel& kernel) const;
  BindingSetState& own(const BindingSet& bindings) const;
  BatchState& own(const Batch& batch) const;

 private:
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
  // Records batch's commands into s.recorded if that has not happened since the last change
  // (s.mutex and the call lock held).
  void record_locked(BatchState& s);
  // Throws device_lost (with how to get a fresh device) once the device is lost.
  void check_usable() const;
  // Runs a backend call: std::bad_alloc becomes out_of_memory, and a device_lost error marks
  // the device lost, so every later call is refused and Runtime::open opens a fresh one.
  template <class F>
  auto guarded(const char* what, F&& f) -> decltype(f());
  // Returns a deadline limit from now, after checking limit is not negative.
  static Deadline deadline_for(std::chrono::milliseconds limit, const char* call);

  std::shared_ptr<DeviceHost> host_;
  DeviceImpl& impl_;  // host_->impl()
  Counters& counters_;  // host_->counters()
  cache::MemoryCache<cache::KernelKey, std::shared_ptr<KernelState>, cache::KernelKeyHash> l1_;
};

}  // namespace vgpu::detail
