// SPDX-License-Identifier: Apache-2.0
// backends/cuda/cuda_device.hpp — one CUDA device as a vgpu DeviceImpl.
//
// Kernel ABI (built-ins in core/kernels/src/cuda_source.cpp and user kernels alike): the entry is
//   extern "C" __global__ void entry(T0* slotA, T1* slotB, ..., Params p)
// with one pointer per binding slot the KernelSource declares, in ascending slot order, followed
// by the params struct passed by value when params_size > 0 (its exact size; keep it to
// 4-byte scalars as kernel_abi.hpp does). cuLaunchKernel gets an args array holding a pointer
// to each slot's CUdeviceptr, then a pointer to the params bytes. Grid = the dispatch's groups,
// block = CompileOptions::workgroup_size; defines become -DNAME=VALUE, and VGPU_LOCAL_SIZE_X/Y/Z
// are defined to the block size. Dynamic shared memory: a module that defines
//   extern "C" { __constant__ unsigned vgpu_dynamic_shared_bytes = <bytes>; }
// gets that many bytes of dynamic shared memory (extern __shared__) on every launch, up to the
// device's opt-in limit (227 KB on sm_90), which is allowed for its entry when it loads.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "cuda_loader.hpp"
#include "vgpu/backend/device_impl.hpp"

namespace vgpu::cuda {

/// Bytes a transfer takes in a staging ring: 256-aligned, so every copy starts aligned.
inline std::uint64_t staged_size(std::uint64_t bytes) { return (bytes + 255) & ~std::uint64_t{255}; }

class CudaDevice;

/// A cuMemAlloc'ed device buffer (never managed memory). Thread-safety: owned by core, freed
/// under the call lock once the work that used it has run.
class CudaBufferImpl final : public BufferImpl {
 public:
  CudaBufferImpl(CudaDevice& device, CUdeviceptr ptr, std::uint64_t bytes, bool owned = true)
      : device_(device), ptr(ptr), bytes(bytes), owned(owned) {}
  ~CudaBufferImpl() override;
  CudaDevice& device_;
  CUdeviceptr ptr;
  std::uint64_t bytes;
  bool owned;  // false: another library's memory (import_device), never freed here
  // Host memory in place (import_host): its address, and whether this buffer registered it
  // with the driver (page-locked and mapped while the buffer lives, unregistered with it) or
  // found it page-locked already. null for device memory.
  void* host = nullptr;
  bool registered = false;
};

/// A loaded module and its entry function. Thread-safety: immutable after compile.
class CudaKernelImpl final : public DeviceBound<KernelImpl, CudaDevice> {
 public:
  using DeviceBound::DeviceBound;
  ~CudaKernelImpl() override;
  CUmodule module = nullptr;
  CUfunction function = nullptr;
  std::vector<std::uint32_t> slots;  ///< declared slots, ascending: the pointer arguments
  std::uint32_t params_size = 0;
  std::array<std::uint32_t, 3> block{1, 1, 1};
  std::uint32_t shared_bytes = 0;  ///< dynamic shared memory per launch (vgpu_dynamic_shared_bytes)
};

/// The device pointers of a kernel's slots, in argument order. Thread-safety: immutable.
class CudaBindingSetImpl final : public BindingSetImpl {
 public:
  std::vector<CUdeviceptr> ptrs;
};

/// A recorded batch: the launches to replay on the stream, and from its second submission on
/// (when it has several launches) a CUDA graph captured from them, replayed with one
/// cuGraphLaunch; likewise a graph of a repeated round trip. Thread-safety: used under the
/// device's call lock only.
class CudaBatchImpl final : public DeviceBound<RecordedBatchImpl, CudaDevice> {
 public:
  using DeviceBound::DeviceBound;
  ~CudaBatchImpl() override;
  CUgraphExec exec = nullptr;
  std::uint64_t submits = 0;
  bool graph_failed = false;  // capture or instantiation failed once: keep plain launches
  struct Launch {
    CUfunction function;
    std::string kernel;  // its name, which a timed launch's time is reported under
    std::array<std::uint32_t, 3> grid, block;
    std::uint32_t shared_bytes;
    std::vector<CUdeviceptr> ptrs;
    ParamsBlock params;
  };
  std::vector<Launch> launches;
  // Round trips (Device::round_trip) with this batch: the last one's copies, and once the same
  // copies come twice, a graph of uploads + launches + readbacks replayed as one launch.
  std::vector<std::uint64_t> trip_signature;
  CUgraphExec trip_exec = nullptr;
  bool trip_graph_failed = false;
};

/// One opened CUDA device: its primary context, one stream, pinned (and device-mapped) staging
/// for uploads and readbacks (reused, grown only when a larger transfer comes), modules compiled by NVRTC for
/// the exact SM (PTX for an SM NVRTC does not know) and cached in L2.
/// Every call makes the primary context current on the calling thread first. Launches are
/// queued on the stream in submission order, so writes, copies and dispatches need no
/// barriers; read() and synchronize() wait for the stream.
/// Time limits: a wait for the stream polls cuStreamQuery (spinning briefly, then sleeping a
/// growing fraction of the time waited) until the call's deadline, since cuStreamSynchronize
/// cannot give up (only a call without a limit uses it). A wait that gives up leaves the work
/// running, so the device is marked lost; destroying its objects then waits at most
/// timeout() for the stream, and a device still busy after that is abandoned (its memory,
/// modules and stream are leaked with a log line, never freed under a running kernel).
/// A fresh device of the same ordinal shares the GPU (and its primary context) with the
/// runaway work, which keeps running beside the new work until it ends.
/// Loss: a sticky error (illegal address, trap, ECC, ...; is_sticky) from any call, or a
/// simulated one (inject_loss: the next stream wait reports CUDA_ERROR_ILLEGAL_ADDRESS),
/// poisons the primary context: the device is marked lost, the next open of the ordinal
/// resets the context (cuda_context.hpp) and retains a fresh one, and this device then frees
/// none of its objects (they died with the context) but only releases its retain.
/// Every enqueuing call counts one serial (submitted_serial); a stream found idle, or a wait
/// for it that returned, completes them all: that is when core frees destroyed objects, so
/// destroying never waits for the stream.
/// Thread-safety: core's call lock serialises every member (stream, staging, serials) except
/// compile(), which may run beside them: it touches only NVRTC, the L2 store, module loading
/// (thread-safe in the driver) and immutable state.
class CudaDevice final : public DeviceImpl {
 public:
  /// Retains the primary context of ordinal and creates the stream.
  CudaDevice(const DriverFns& fns, const NvrtcFns* nvrtc, CUdevice device, DeviceInfo info, int cc_major, int cc_minor,
             std::shared_ptr<const BackendSettings> settings);
  ~CudaDevice() override;

  const DeviceInfo& info() const override { return info_; }
  VGPU_DEVICE_IMPL_OVERRIDES;
  /// Returns the buffer's device pointer (in the primary context), for DLPack and Array::data.
  BufferAddress address(BufferImpl& buffer) override;
  /// Uses device memory another library allocated on this GPU (torch, CuPy) in place; null
  /// when the driver does not know ptr or it belongs to another GPU.
  std::unique_ptr<BufferImpl> import_device(void* ptr, std::uint64_t bytes) override;
  std::unique_ptr<BufferImpl> import_host(void* data, std::uint64_t bytes) override;
  /// Returns the stream vgpu's work on this device runs on.
  std::uintptr_t native_stream() const noexcept override { return reinterpret_cast<std::uintptr_t>(stream_); }
  void round_trip(std::span<const HostWriteOp> writes, RecordedBatchImpl* batch, std::span<const HostReadOp> reads,
                  const Deadline& deadline) override;
  /// Returns the serial of the newest enqueued work.
  std::uint64_t submitted_serial() noexcept override { return enqueued_; }
  /// Returns enqueued_ once the stream is idle (cuStreamQuery, never waits), else the last known.
  std::uint64_t completed_serial() noexcept override;
  /// Waits (within timeout()) for the stream; false when the device is abandoned.
  bool release() noexcept override;
  /// True where the driver has cuEventElapsedTime: launches are timed by a pair of events.
  bool can_time_dispatches() const noexcept override { return fn_.cuEventElapsedTime != nullptr; }

  // Used by the object destructors above (core calls them once no queued work uses the object).
  void free_buffer(CUdeviceptr ptr);
  /// Unregisters host memory import_host registered (after the work that used it has run).
  void unregister_host(void* host);
  /// Returns the device address of [p, p + bytes) when the driver has all of it page-locked and
  /// mapped as one range (registered, or allocated pinned), else 0.
  CUdeviceptr mapped_range(const void* p, std::uint64_t bytes);
  /// Returns whether the driver has [p, p + bytes) page-locked (mapped_range), so copies can
  /// DMA from or to it where it is.
  bool page_locked(const void* p, std::uint64_t bytes);
  void unload(CUmodule module);
  void destroy_graph(CUgraphExec exec);

 private:
  struct Pinned {
    void* ptr = nullptr;
    std::uint64_t size = 0;
    CUdeviceptr dev = 0;  // the same memory as the device sees it (0: not mapped)
  };
  // Makes the primary context current; throws device_lost when it was reset under this device.
  void make_current();
  // check_cu, and for a sticky error first: poisons the context's generation (the next open
  // of this ordinal resets it) and marks the device lost.
  void check(CUresult r, const char* call);
  // True once the context this device's objects live in is poisoned or was reset: they are
  // then never freed one by one, and nothing is waited for.
  bool context_gone() const noexcept;
  // Grows p to at least bytes (waiting for the stream first, since queued copies may use it).
  void reserve(Pinned& p, std::uint64_t bytes, const Deadline& deadline);
  // Waits for the stream until deadline; false when it passed first (the work still runs).
  bool try_sync(const Deadline& deadline);
  // try_sync, or: marks the device lost and throws timeout (what: for the message).
  void sync(const Deadline& deadline, const char* what);
  // Before the device goes: waits for the stream within timeout(). Returns false, never
  // throwing, when its objects must be leaked: the process is exiting, or the work did not
  // finish (the device is then abandoned: DeviceImpl::settle).
  bool settle_work() noexcept;
  void launch(CudaBatchImpl& batch);
  // Captures what enqueue queues on the stream into an instantiated graph; null (with the
  // stream usable) when capture or instantiation fails.
  CUgraphExec capture(const std::function<void()>& enqueue);
  // Queues a round trip whose uploads are staged at offset 0 of the upload ring: the copies in,
  // the batch's launches, the copies out to offset 0 of the download ring. by_kernel: the
  // copies are copy_segments launches on the mapped staging instead of memcpys.
  void enqueue_trip(CudaBatchImpl& batch, std::span<const HostWriteOp> writes, std::span<const HostReadOp> reads,
                    bool by_kernel);
  // A round trip of at least kPipelineMin bytes one way: uploads and readbacks go through the
  // pinned staging in chunks, each chunk's DMA overlapping the host copy of the next
  // (cuda_round_trip.cpp explains why this and not registering the caller's memory).
  void pipelined_trip(std::span<const HostWriteOp> writes, CudaBatchImpl* batch, std::span<const HostReadOp> reads,
                      const Deadline& deadline);
  // Waits for event until deadline, as try_sync waits for the stream; false when it passed first.
  bool try_wait_event(CUevent event, const Deadline& deadline);
  // Launches copy_segments over ranges {src, dst, bytes} (at most 8).
  void launch_copies(std::span<const std::array<CUdeviceptr, 3>> ranges);
  // Loads the copy_segments kernel (L3 fatbin, else NVRTC); leaves copy_fn_ null when
  // neither works, and small round trips then use memcpys.
  void load_copy_kernel();
  // Loads k.module from L2 or NVRTC (an L2 image the driver refuses, or that lacks the entry
  // point, is dropped and rebuilt); returns the last cuModuleLoadData result.
  CUresult load_compiled(CudaKernelImpl& k, const KernelSource& source, const DialectSource& code,
                         const CompileOptions& options);
  // The dynamic shared memory k's module asks for in its extern "C" __constant__ unsigned
  // vgpu_dynamic_shared_bytes (0 without one), allowed on k.function; refuses more than the
  // device gives a block.
  std::uint32_t dynamic_shared_bytes(CudaKernelImpl& k, const std::string& name);
  // Module image (cubin or PTX) from L2 or NVRTC; *from_l2 says which, *compile_us what NVRTC
  // took (the caller stores a compiled image once it proved loadable).
  std::vector<std::uint8_t> image_for(const KernelSource& source, const DialectSource& code,
                                      const CompileOptions& options, bool use_l2, bool* from_l2,
                                      std::uint64_t* compile_us);

  const DriverFns& fn_;
  const NvrtcFns* nvrtc_;  // null when NVRTC is missing: compile() then reports it
  CUdevice device_;
  DeviceInfo info_;
  int cc_major_, cc_minor_;
  CUcontext ctx_ = nullptr;
  std::uint64_t generation_ = 0;       // of the primary context retained (cuda_context.hpp)
  std::atomic<bool> poisoned_{false};  // a sticky error struck (compile() may read it beside)
  bool use_graphs_ = true;             // VGPU_CUDA_GRAPHS=0 turns graph replay off

  // Used under core's call lock only.
  CUstream stream_ = nullptr;
  std::uint64_t enqueued_ = 0;   // serials of enqueued work (submitted_serial)
  std::uint64_t completed_ = 0;  // every serial up to this has run
  Pinned upload_;                // host → device staging ring
  std::uint64_t upload_head_ = 0;
  Pinned download_;                            // device → host staging
  std::vector<std::uint64_t> trip_signature_;  // scratch for round_trip, reused
  bool zero_copy_ = true;                      // VGPU_CUDA_ZERO_COPY=0: small round trips use memcpys too
  bool copy_loaded_ = false;                   // load_copy_kernel() ran
  std::vector<CUevent> chunk_events_;          // pipelined_trip's readback chunks, created once, reused
  CUmodule copy_module_ = nullptr;
  CUfunction copy_fn_ = nullptr;
  // Dispatch timing: a pair of events around each timed launch, read after a sync.
  struct PendingTimer {
    CUevent begin = nullptr, end = nullptr;
    std::string kernel;
  };
  std::vector<PendingTimer> timers_;  // in launch order
  std::vector<CUevent> free_events_;  // to reuse
  CUevent anchor_ = nullptr;          // the last reported end: later times are measured from it
  double anchor_ns_ = 0;              // its time on the device's clock (0: the first timed launch)
  // Returns true when batches may be replayed as graphs now (timing needs the plain launches).
  bool graphs() const noexcept { return use_graphs_ && !timing_dispatches(); }
  // Returns an event for a timed launch (from the free list, else created).
  CUevent timer_event();
  // Reports the times of the launches whose events have completed (after a sync), in order.
  void collect_timers() noexcept;
};

}  // namespace vgpu::cuda
