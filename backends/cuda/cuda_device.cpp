// SPDX-License-Identifier: Apache-2.0
// backends/cuda/cuda_device.cpp — context, stream, buffers and pinned staging, bindings,
// recorded batches and their launches.
#include "cuda_device.hpp"

#include <nvtx3/nvToolsExt.h>

#include "cuda_context.hpp"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstring>
#include <functional>
#include <string_view>
#include <thread>

#include "vgpu/backend/backend_settings.hpp"
#include "vgpu/error.hpp"
#include "vgpu/log.hpp"

namespace vgpu::cuda {
namespace {

constexpr std::uint64_t kMinStaging = 1ull << 20;
constexpr std::size_t kMaxArgs = 64;  // slots (max_bindings is 16) + the params block

}  // namespace

CudaBufferImpl::~CudaBufferImpl() {
  if (owned) device_.free_buffer(ptr);
  if (registered) device_.unregister_host(host);
}
CudaKernelImpl::~CudaKernelImpl() { device_.unload(module); }
CudaBatchImpl::~CudaBatchImpl() {
  device_.destroy_graph(exec);
  device_.destroy_graph(trip_exec);
}

CudaDevice::CudaDevice(const DriverFns& fns, const NvrtcFns* nvrtc, CUdevice device, DeviceInfo info, int cc_major,
                       int cc_minor, std::shared_ptr<const BackendSettings> settings)
    : DeviceImpl(std::move(settings)),
      fn_(fns),
      nvrtc_(nvrtc),
      device_(device),
      info_(std::move(info)),
      cc_major_(cc_major),
      cc_minor_(cc_minor) {
  use_graphs_ = this->settings().config.cuda_graphs;
  zero_copy_ = this->settings().config.cuda_zero_copy;
  generation_ = retain_primary(fn_, device_, &ctx_);
  make_current();
  const CUresult r = fn_.cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING);
  if (r != CUDA_SUCCESS) {
    fn_.cuDevicePrimaryCtxRelease(device_);
    if (is_sticky(r)) {
      poison_primary(device_, generation_);  // the next open resets again (the driver may allow it then)
      fail_poisoned_process(fn_, r, "cuStreamCreate", info_.name);
    }
    fail_cu(fn_, r, "cuStreamCreate");
  }
}

bool CudaDevice::release() noexcept {
  if (process_exiting()) return true;  // the destructor leaves everything to the OS
  // A poisoned context runs nothing any more (the fault aborted its work), and a reset one
  // has none: nothing to wait for, and the objects free nothing (context_gone()).
  if (context_gone()) return true;
  return settle_work();
}

CudaDevice::~CudaDevice() {
  // At exit the driver may already be tearing down: leave everything to the OS.
  if (process_exiting()) return;
  if (context_gone()) {
    // Its memory, modules and stream die with the context (at the reset the next open of this
    // ordinal does, or now if this was the last retain); a handle freed individually could
    // alias the reset context's new allocations. The driver allows releasing after a reset.
    fn_.cuDevicePrimaryCtxRelease(device_);
    return;
  }
  // Never free what a kernel the device gave up on may still use (release() normally settled).
  if (!settle_work()) return;
  for (CUevent e : chunk_events_) fn_.cuEventDestroy(e);
  for (const PendingTimer& t : timers_) {
    fn_.cuEventDestroy(t.begin);
    fn_.cuEventDestroy(t.end);
  }
  for (CUevent e : free_events_) fn_.cuEventDestroy(e);
  if (anchor_) fn_.cuEventDestroy(anchor_);
  if (upload_.ptr) fn_.cuMemFreeHost(upload_.ptr);
  if (download_.ptr) fn_.cuMemFreeHost(download_.ptr);
  if (copy_module_) fn_.cuModuleUnload(copy_module_);
  fn_.cuStreamDestroy(stream_);
  fn_.cuDevicePrimaryCtxRelease(device_);
}

void CudaDevice::make_current() {
  // A sticky fault on another device of this ordinal (another Runtime's) reset the context
  // under this one: everything it held is gone.
  if (!primary_is_current(device_, generation_)) {
    mark_lost("its CUDA context was reset after a sticky fault on another device of the same GPU");
    fail(ErrorCategory::device_lost,
         "the CUDA context of '" + info_.name + "' was reset after a fault in another handle of the same GPU.",
         "vgpu recreates the device at its next call; write the data of its buffers again.");
  }
  // The primary context is shared per device and process: making it current is cheap and lets
  // any thread call in.
  check(fn_.cuCtxSetCurrent(ctx_), "cuCtxSetCurrent");
}

void CudaDevice::check(CUresult r, const char* call) {
  if (r == CUDA_SUCCESS) return;
  if (is_sticky(r)) {
    // The context is unusable for good: the next open of this ordinal resets it, and this
    // device's objects must not be freed one by one (context_gone()).
    poisoned_.store(true, std::memory_order_release);
    poison_primary(device_, generation_);
    mark_lost(std::string(call) + " failed with " + error_text(fn_, r) + ", which poisons the CUDA context");
  }
  fail_cu(fn_, r, call);
}

bool CudaDevice::context_gone() const noexcept {
  return poisoned_.load(std::memory_order_acquire) || !primary_is_current(device_, generation_);
}

bool CudaDevice::try_sync(const Deadline& deadline) {
  // The test hook: report the loss as the driver reports a kernel's illegal access, a sticky
  // error, so the path a real fault takes runs (the work queued so far is abandoned with the
  // context).
  if (take_injected_loss()) check(CUDA_ERROR_ILLEGAL_ADDRESS, "cuStreamQuery (simulated loss)");
  if (!deadline.limited()) {
    check(fn_.cuStreamSynchronize(stream_), "cuStreamSynchronize");
  } else {
    // cuStreamSynchronize cannot give up: poll. Short work ends within microseconds, so spin
    // (yielding the core) at first; then sleep for 1/16 of the time waited so far (at most
    // 1 ms), which keeps the overshoot past the work's end to a few percent.
    const auto start = std::chrono::steady_clock::now();
    for (;;) {
      const CUresult r = fn_.cuStreamQuery(stream_);
      if (r == CUDA_SUCCESS) break;
      if (r != CUDA_ERROR_NOT_READY) fail_cu(fn_, r, "cuStreamQuery");
      if (deadline.expired()) return false;
      pause_while_polling(start);
    }
  }
  upload_head_ = 0;  // nothing queued reads the upload ring any more
  completed_ = enqueued_;
  if (!timers_.empty()) collect_timers();
  return true;
}

std::uint64_t CudaDevice::completed_serial() noexcept {
  if (completed_ == enqueued_) return completed_;
  if (context_gone()) return completed_;  // its objects wait for release(), which frees nothing
  try {
    make_current();
    // One stream: once it is idle, everything enqueued so far has run.
    if (fn_.cuStreamQuery(stream_) == CUDA_SUCCESS) {
      upload_head_ = 0;
      completed_ = enqueued_;
    }
  } catch (const Error&) {  // no context on this thread: ask again later
  }
  return completed_;
}

void CudaDevice::sync(const Deadline& deadline, const char* what) {
  if (try_sync(deadline)) return;
  // The stream still runs the work: nothing it uses may be reused or freed, so the device
  // takes no more calls.
  mark_lost(std::string("a wait for its stream ran past the ") + std::to_string(deadline.limit().count()) +
            " ms limit while " + what + ", with the work still running");
  fail_timeout(info_, deadline, what, true);
}

bool CudaDevice::settle_work() noexcept {
  if (process_exiting()) return false;
  return settle("CUDA", "memory, modules and stream", [this](const Deadline& deadline) {
    make_current();
    return try_sync(deadline);
  });
}

void CudaDevice::reserve(Pinned& p, std::uint64_t bytes, const Deadline& deadline) {
  if (p.size >= bytes) return;
  sync(deadline, "waiting for queued copies before growing the staging memory");
  if (p.ptr) fn_.cuMemFreeHost(p.ptr);
  p = Pinned{};
  const std::uint64_t size = std::max<std::uint64_t>(std::bit_ceil(bytes), kMinStaging);
  void* ptr = nullptr;
  // Mapped into the device's address space too: small round trips copy with a kernel.
  check(fn_.cuMemHostAlloc(&ptr, size, CU_MEMHOSTALLOC_DEVICEMAP), "cuMemHostAlloc");
  CUdeviceptr dev = 0;
  if (fn_.cuMemHostGetDevicePointer(&dev, ptr, 0) != CUDA_SUCCESS) dev = 0;
  p = Pinned{ptr, size, dev};
}

BufferAddress CudaDevice::address(BufferImpl& buffer) {
  const auto& b = static_cast<CudaBufferImpl&>(buffer);
  if (b.host) return BufferAddress{b.host, BufferAddress::Space::host};
  return BufferAddress{reinterpret_cast<void*>(b.ptr), BufferAddress::Space::cuda_device};
}

// Host memory in place (Array::from_external with host memory): registered with the driver,
// page-locked and mapped into the GPU's address space for the buffer's life, so kernels reach
// it over the bus and copies to or from it run as DMA without staging (pipelined_trip). Memory
// the driver has page-locked already (registered by another library, or allocated pinned:
// cudaHostAlloc, torch's pin_memory) is used as it is and left registered. Only arrays over
// the caller's memory import it (imports_host() stays false: a PersistentKernel stages its
// calls, since kernels reading host memory over the bus are far slower than a copy).
std::unique_ptr<BufferImpl> CudaDevice::import_host(void* data, std::uint64_t bytes) {
  make_current();
  const CUresult r = fn_.cuMemHostRegister(data, bytes, CU_MEMHOSTREGISTER_DEVICEMAP | CU_MEMHOSTREGISTER_PORTABLE);
  if (r != CUDA_SUCCESS && r != CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED)
    fail(ErrorCategory::not_supported,
         "the CUDA driver would not page-lock " + std::to_string(bytes) + " bytes of host memory for " + info_.id() +
             " (cuMemHostRegister: " + error_text(fn_, r) + ").",
         "copy the data in with Array::from_host, or raise the process's locked-memory limit (ulimit -l).");
  const bool ours = r == CUDA_SUCCESS;
  // The whole range must be mapped, contiguously: memory registered by someone else may cover
  // only its start.
  const CUdeviceptr first = mapped_range(data, bytes);
  if (first == 0) {
    if (ours) fn_.cuMemHostUnregister(data);
    fail(ErrorCategory::not_supported,
         "host memory at " + std::to_string(reinterpret_cast<std::uintptr_t>(data)) + " (" + std::to_string(bytes) +
             " bytes) is only partly page-locked by another registration, so " + info_.id() + " cannot map it whole.",
         "copy the data in with Array::from_host, or pass memory no other library has registered in part.");
  }
  auto b = std::make_unique<CudaBufferImpl>(*this, first, bytes, false);
  b->host = data;
  b->registered = ours;
  return b;
}

void CudaDevice::unregister_host(void* host) {
  // A context reset after a fault took its registrations with it.
  if (!host || process_exiting() || context_gone()) return;
  fn_.cuCtxSetCurrent(ctx_);
  fn_.cuMemHostUnregister(host);
}

CUdeviceptr CudaDevice::mapped_range(const void* p, std::uint64_t bytes) {
  // Pageable memory has no device address (an error, not sticky). Both ends, mapped as one
  // range: a registration may cover only part of it.
  if (bytes == 0) return 0;
  CUdeviceptr first = 0, last = 0;
  auto* q = const_cast<void*>(p);
  const bool whole =
      fn_.cuMemHostGetDevicePointer(&first, q, 0) == CUDA_SUCCESS &&
      fn_.cuMemHostGetDevicePointer(&last, static_cast<std::uint8_t*>(q) + bytes - 1, 0) == CUDA_SUCCESS &&
      last == first + bytes - 1;
  return whole ? first : 0;
}

bool CudaDevice::page_locked(const void* p, std::uint64_t bytes) { return mapped_range(p, bytes) != 0; }

std::unique_ptr<BufferImpl> CudaDevice::import_device(void* ptr, std::uint64_t bytes) {
  make_current();
  int ordinal = -1;
  const auto p = reinterpret_cast<CUdeviceptr>(ptr);
  if (fn_.cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p) != CUDA_SUCCESS) return nullptr;
  if (ordinal != static_cast<int>(device_)) return nullptr;  // another GPU's memory
  return std::make_unique<CudaBufferImpl>(*this, p, bytes, false);
}

std::unique_ptr<BufferImpl> CudaDevice::create_buffer(std::uint64_t bytes) {
  make_current();
  CUdeviceptr ptr = 0;
  check(fn_.cuMemAlloc(&ptr, bytes), "cuMemAlloc");
  return std::make_unique<CudaBufferImpl>(*this, ptr, bytes);
}

void CudaDevice::free_buffer(CUdeviceptr ptr) {
  // Core frees a buffer only after the work that used it has run (cuMemFree would wait for
  // it, without a limit).
  if (!ptr || process_exiting() || context_gone()) return;
  fn_.cuMemFree(ptr);
}

void CudaDevice::write(BufferImpl& buffer, std::uint64_t offset, const void* data, std::uint64_t bytes,
                       const Deadline& deadline) {
  auto& b = static_cast<CudaBufferImpl&>(buffer);
  make_current();
  // Uploads go through a pinned ring so the copy is truly asynchronous; when the ring is full,
  // wait for the stream (which frees it all) and start over.
  if (upload_head_ + bytes > upload_.size) {
    if (bytes > upload_.size)
      reserve(upload_, bytes, deadline);
    else
      sync(deadline, "waiting for queued uploads to free the staging ring");
  }
  auto* dst = static_cast<std::uint8_t*>(upload_.ptr) + upload_head_;
  std::memcpy(dst, data, bytes);
  ++enqueued_;  // after the waits above, which complete everything enqueued before
  check(fn_.cuMemcpyHtoDAsync(b.ptr + offset, dst, bytes, stream_), "cuMemcpyHtoDAsync");
  upload_head_ += staged_size(bytes);
}

void CudaDevice::read(BufferImpl& buffer, std::uint64_t offset, void* out, std::uint64_t bytes,
                      const Deadline& deadline) {
  auto& b = static_cast<CudaBufferImpl&>(buffer);
  make_current();
  reserve(download_, bytes, deadline);
  ++enqueued_;
  check(fn_.cuMemcpyDtoHAsync(download_.ptr, b.ptr + offset, bytes, stream_), "cuMemcpyDtoHAsync");
  sync(deadline, "waiting for submitted work to read a buffer");
  std::memcpy(out, download_.ptr, bytes);
}

void CudaDevice::copy(BufferImpl& src, std::uint64_t src_offset, BufferImpl& dst, std::uint64_t dst_offset,
                      std::uint64_t bytes, const Deadline& /*deadline*/) {  // queued, never waits
  auto& s = static_cast<CudaBufferImpl&>(src);
  auto& d = static_cast<CudaBufferImpl&>(dst);
  make_current();
  ++enqueued_;
  check(fn_.cuMemcpyDtoDAsync(d.ptr + dst_offset, s.ptr + src_offset, bytes, stream_), "cuMemcpyDtoDAsync");
}

std::unique_ptr<BindingSetImpl> CudaDevice::bind(KernelImpl& kernel, std::span<BufferImpl* const> by_slot) {
  auto& k = static_cast<CudaKernelImpl&>(kernel);
  auto set = std::make_unique<CudaBindingSetImpl>();
  set->ptrs.reserve(k.slots.size());
  for (std::uint32_t slot : k.slots) set->ptrs.push_back(static_cast<CudaBufferImpl*>(by_slot[slot])->ptr);
  return set;
}

std::unique_ptr<RecordedBatchImpl> CudaDevice::record(std::span<const DispatchCommand> commands) {
  auto batch = std::make_unique<CudaBatchImpl>(*this);
  batch->launches.reserve(commands.size());
  for (const DispatchCommand& c : commands) {
    auto& k = *static_cast<CudaKernelImpl*>(c.kernel);
    auto& b = *static_cast<CudaBindingSetImpl*>(c.bindings);
    batch->launches.push_back(CudaBatchImpl::Launch{
        k.function, k.name, {c.groups.x, c.groups.y, c.groups.z}, k.block, k.shared_bytes, b.ptrs, c.params});
  }
  return batch;
}

void CudaDevice::launch(CudaBatchImpl& batch) {
  // cuLaunchKernel copies the argument values at the call, so the args array can live here.
  void* args[kMaxArgs];
  const bool timed = timing_dispatches();
  for (auto& l : batch.launches) {
    std::size_t n = 0;
    for (CUdeviceptr& p : l.ptrs) args[n++] = &p;
    if (l.params.size() > 0) args[n++] = const_cast<void*>(l.params.data());
    PendingTimer timer;
    if (timed) {
      timer = PendingTimer{timer_event(), timer_event(), l.kernel};
      check(fn_.cuEventRecord(timer.begin, stream_), "cuEventRecord");
    }
    // An NVTX range named after the kernel around its launch: Nsight Systems (nsys) shows it;
    // NVTX loads the profiler's injection library at run time, and is a no-op without one.
    nvtxRangePushA(l.kernel.c_str());
    const CUresult launched = fn_.cuLaunchKernel(l.function, l.grid[0], l.grid[1], l.grid[2], l.block[0], l.block[1],
                                                 l.block[2], l.shared_bytes, stream_, args, nullptr);
    nvtxRangePop();
    check(launched, "cuLaunchKernel");
    if (timed) {
      check(fn_.cuEventRecord(timer.end, stream_), "cuEventRecord");
      timers_.push_back(std::move(timer));
    }
  }
}

CUevent CudaDevice::timer_event() {
  if (!free_events_.empty()) {
    CUevent e = free_events_.back();
    free_events_.pop_back();
    return e;
  }
  CUevent e = nullptr;
  check(fn_.cuEventCreate(&e, CU_EVENT_DEFAULT), "cuEventCreate");  // with timing (not CU_EVENT_DISABLE_TIMING)
  return e;
}

void CudaDevice::collect_timers() noexcept {
  // Event times are differences (cuEventElapsedTime, ~0.5 us resolution), so each launch is
  // placed after the last reported end (the anchor): a chain on one clock whose origin is the
  // first timed launch.
  std::size_t done = 0;
  for (; done < timers_.size(); ++done) {
    PendingTimer& t = timers_[done];
    if (fn_.cuEventQuery(t.end) != CUDA_SUCCESS) break;  // launched in order: the rest are later
    float since_anchor = 0, took = 0;
    if (anchor_ && fn_.cuEventElapsedTime(&since_anchor, anchor_, t.begin) != CUDA_SUCCESS) since_anchor = 0;
    if (fn_.cuEventElapsedTime(&took, t.begin, t.end) != CUDA_SUCCESS) took = 0;
    const double begin = anchor_ns_ + std::max(0.0, static_cast<double>(since_anchor) * 1e6);
    const double end = begin + std::max(0.0, static_cast<double>(took) * 1e6);
    report_dispatch_time(t.kernel, static_cast<std::uint64_t>(begin), static_cast<std::uint64_t>(end));
    try {
      free_events_.reserve(free_events_.size() + 2);
    } catch (...) {  // no room to keep them: destroy instead
      fn_.cuEventDestroy(t.begin);
      if (anchor_) fn_.cuEventDestroy(anchor_);
      anchor_ = t.end;
      anchor_ns_ = end;
      continue;
    }
    free_events_.push_back(t.begin);
    if (anchor_) free_events_.push_back(anchor_);
    anchor_ = t.end;
    anchor_ns_ = end;
  }
  timers_.erase(timers_.begin(), timers_.begin() + static_cast<std::ptrdiff_t>(done));
}

CUgraphExec CudaDevice::capture(const std::function<void()>& enqueue) {
  // Thread-local capture: only this thread (which holds the call lock) is restricted meanwhile.
  if (fn_.cuStreamBeginCapture(stream_, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL) != CUDA_SUCCESS) return nullptr;
  bool queued = true;
  try {
    enqueue();
  } catch (const Error&) {
    queued = false;
  }
  CUgraph graph = nullptr;
  const CUresult end = fn_.cuStreamEndCapture(stream_, &graph);
  CUgraphExec exec = nullptr;
  if (queued && end == CUDA_SUCCESS && graph && fn_.cuGraphInstantiate(&exec, graph, 0) != CUDA_SUCCESS) exec = nullptr;
  if (graph) fn_.cuGraphDestroy(graph);
  return exec;
}

void CudaDevice::submit(RecordedBatchImpl& recorded, const Deadline& /*deadline*/) {  // queued, never waits
  auto& batch = static_cast<CudaBatchImpl&>(recorded);
  make_current();
  ++enqueued_;
  // A batch of several launches submitted more than once is replayed as a CUDA graph: one
  // cuGraphLaunch instead of a launch per kernel. The first submission launches directly, so
  // one-off dispatches never pay for instantiation.
  if (graphs() && !batch.graph_failed && batch.launches.size() > 1 && batch.submits++ > 0) {
    if (!batch.exec) batch.exec = capture([&] { launch(batch); });
    if (batch.exec) {
      check(fn_.cuGraphLaunch(batch.exec, stream_), "cuGraphLaunch");
      return;
    }
    batch.graph_failed = true;
  }
  launch(batch);
}

void CudaDevice::destroy_graph(CUgraphExec exec) {
  // No queued replay runs it any more (core frees a batch after its last run has finished).
  if (!exec || process_exiting() || context_gone()) return;
  fn_.cuGraphExecDestroy(exec);
}

void CudaDevice::synchronize(const Deadline& deadline) {
  make_current();
  sync(deadline, "waiting for submitted work (synchronize)");
}

}  // namespace vgpu::cuda
