// SPDX-License-Identifier: Apache-2.0
// backends/cuda/cuda_round_trip.cpp — Device::round_trip on CUDA: uploads, the batch and the
// readbacks queued back to back with their staging at fixed offsets, so a repeated round trip
// is captured once into a graph and replayed with one cuGraphLaunch. Small trips (≤ 64 KiB
// each way) copy with the copy_segments kernel on device-mapped staging instead of memcpys:
// inside a graph a kernel follows a kernel far sooner than a memcpy node does. Large trips
// (≥ 1 MiB one way) are pipelined instead: pipelined_trip below.
#include <oneapi/tbb/parallel_for.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include "vgpu/kernels/cuda_source.hpp"
#include "cuda_device.hpp"
#include "cuda_nvrtc.hpp"
#include "vgpu/cache/precompiled.hpp"
#include "vgpu/error.hpp"
#include "vgpu/log.hpp"

namespace vgpu::cuda {
namespace {

constexpr std::uint64_t kZeroCopyMax = 64 * 1024;  // per direction; larger trips use the copy engines
constexpr std::size_t kMaxSegments = 8;            // CopySegmentsParams::seg in copy_segments.cu
constexpr std::uint64_t kPipelineMin = 1 << 20;    // one way; smaller trips replay a graph
// Pipelined chunks: at least 512 KiB (a DMA that size runs near the link's rate), and at most
// ~16 per direction (16 readback events; the last chunk's copy is what the overlap cannot hide).
constexpr std::uint64_t kChunkMin = 512 * 1024;
constexpr std::uint64_t kMaxChunks = 16;

std::uint64_t chunk_for(std::uint64_t total) {
  return std::max<std::uint64_t>(kChunkMin, staged_size((total + kMaxChunks - 1) / kMaxChunks));
}

// A chunk's host copy, between pageable memory and the pinned ring, split over up to 4 cores:
// one core copies ~10-25 GB/s, slower than the link's DMA, so a single-threaded copy is what a
// large trip waits for. Pieces of at least 128 KiB (smaller ones cost more to hand out).
void copy_chunk(void* dst, const void* src, std::uint64_t bytes) {
  constexpr std::uint64_t kPiece = 128 * 1024;
  const std::uint64_t pieces = std::min<std::uint64_t>(4, bytes / kPiece);
  if (pieces < 2) {
    std::memcpy(dst, src, bytes);
    return;
  }
  const std::uint64_t each = (bytes / pieces + 63) / 64 * 64;
  tbb::parallel_for(std::uint64_t{0}, pieces, [&](std::uint64_t i) {
    const std::uint64_t off = i * each;
    if (off < bytes)
      std::memcpy(static_cast<std::uint8_t*>(dst) + off, static_cast<const std::uint8_t*>(src) + off,
                  std::min(each, bytes - off));
  });
}

// Must match core/kernels/cuda/copy_segments.cu.
struct CopySegmentsParams {
  std::uint32_t count, pad0, pad1, pad2;
  struct {
    std::uint64_t src, dst, bytes;
  } seg[kMaxSegments];
};

}  // namespace

void CudaDevice::load_copy_kernel() {
  const kernels::BuiltinCuda& k = kernels::builtin_cuda("copy_segments");
  CompileOptions options;
  options.workgroup_size = {256, 1, 1};
  make_current();
  CUmodule module = nullptr;
  if (auto fatbin = cache::find_precompiled_cuda(k.source, k.entry, options); !fatbin.empty()) {
    if (fn_.cuModuleLoadData(&module, fatbin.data()) != CUDA_SUCCESS) module = nullptr;
  }
  if (!module && nvrtc_) {
    KernelSource source;
    source.name = "vgpu.copy_segments";
    source.add_cuda(std::string(k.source), std::string(k.entry));
    try {
      const std::vector<std::uint8_t> image = compile_cuda(*nvrtc_, source, options, cc_major_ * 10 + cc_minor_);
      if (fn_.cuModuleLoadData(&module, image.data()) != CUDA_SUCCESS) module = nullptr;
    } catch (const Error& e) {
      log(LogLevel::debug, std::string("CUDA: copy_segments did not compile: ") + e.what());
    }
  }
  if (!module) {
    log(LogLevel::debug, "CUDA: no copy_segments kernel; small round trips use memcpys.");
    return;
  }
  CUfunction fn = nullptr;
  if (fn_.cuModuleGetFunction(&fn, module, std::string(k.entry).c_str()) != CUDA_SUCCESS) {
    fn_.cuModuleUnload(module);
    return;
  }
  copy_module_ = module;
  copy_fn_ = fn;
}

void CudaDevice::launch_copies(std::span<const std::array<CUdeviceptr, 3>> ranges) {
  if (ranges.empty()) return;
  CopySegmentsParams p{};
  std::uint64_t largest = 0;
  for (const auto& [src, dst, bytes] : ranges) {
    p.seg[p.count++] = {src, dst, bytes};
    largest = std::max<std::uint64_t>(largest, bytes);
  }
  // One 16-byte chunk per thread of the largest range: many loads in flight over PCIe.
  const auto blocks = static_cast<unsigned>(std::clamp<std::uint64_t>((largest + 4095) / 4096, 1, 1024));
  void* args[] = {&p};
  check(fn_.cuLaunchKernel(copy_fn_, blocks, 1, 1, 256, 1, 1, 0, stream_, args, nullptr), "cuLaunchKernel");
}

void CudaDevice::enqueue_trip(CudaBatchImpl& batch, std::span<const HostWriteOp> writes,
                              std::span<const HostReadOp> reads, bool by_kernel) {
  std::array<std::array<CUdeviceptr, 3>, kMaxSegments> ranges;
  std::size_t n = 0;
  std::uint64_t at = 0;
  for (const HostWriteOp& w : writes) {
    const CUdeviceptr dst = static_cast<CudaBufferImpl*>(w.buffer)->ptr + w.offset;
    if (by_kernel)
      ranges[n++] = {upload_.dev + at, dst, w.bytes};
    else
      check(fn_.cuMemcpyHtoDAsync(dst, static_cast<std::uint8_t*>(upload_.ptr) + at, w.bytes, stream_),
            "cuMemcpyHtoDAsync");
    at += staged_size(w.bytes);
  }
  if (by_kernel) launch_copies({ranges.data(), n});
  launch(batch);
  n = 0;
  at = 0;
  for (const HostReadOp& r : reads) {
    const CUdeviceptr src = static_cast<CudaBufferImpl*>(r.buffer)->ptr + r.offset;
    if (by_kernel)
      ranges[n++] = {src, download_.dev + at, r.bytes};
    else
      check(fn_.cuMemcpyDtoHAsync(static_cast<std::uint8_t*>(download_.ptr) + at, src, r.bytes, stream_),
            "cuMemcpyDtoHAsync");
    at += staged_size(r.bytes);
  }
  if (by_kernel) launch_copies({ranges.data(), n});
}

void CudaDevice::round_trip(std::span<const HostWriteOp> writes, RecordedBatchImpl* recorded,
                            std::span<const HostReadOp> reads, const Deadline& deadline) {
  auto* batch = static_cast<CudaBatchImpl*>(recorded);
  std::uint64_t up_bytes = 0, down_bytes = 0;
  for (const HostWriteOp& w : writes) up_bytes += w.bytes;
  for (const HostReadOp& r : reads) down_bytes += r.bytes;
  if (up_bytes >= kPipelineMin || down_bytes >= kPipelineMin) {
    pipelined_trip(writes, batch, reads, deadline);
    return;
  }
  if (!graphs() || !batch || batch->trip_graph_failed) {
    DeviceImpl::round_trip(writes, recorded, reads, deadline);
    return;
  }
  std::uint64_t up = 0, down = 0;
  for (const HostWriteOp& w : writes) up += staged_size(w.bytes);
  for (const HostReadOp& r : reads) down += staged_size(r.bytes);
  bool by_kernel = zero_copy_ && up <= kZeroCopyMax && down <= kZeroCopyMax && writes.size() <= kMaxSegments &&
                   reads.size() <= kMaxSegments;
  if (by_kernel && !copy_loaded_) {
    copy_loaded_ = true;  // once, successful or not
    load_copy_kernel();
  }

  make_current();
  // The trip's data sits at offset 0 of both staging rings, so a repeated trip issues exactly
  // the same copies and its graph can be replayed as is.
  if (upload_head_ != 0) sync(deadline, "waiting for queued uploads to free the staging ring");
  reserve(upload_, up, deadline);
  reserve(download_, down, deadline);
  by_kernel = by_kernel && copy_fn_ && upload_.dev && download_.dev;
  auto& sig = trip_signature_;
  sig.clear();
  sig.push_back(by_kernel);
  sig.push_back(reinterpret_cast<std::uintptr_t>(upload_.ptr));
  sig.push_back(reinterpret_cast<std::uintptr_t>(download_.ptr));
  std::uint64_t at = 0;
  for (const HostWriteOp& w : writes) {
    std::memcpy(static_cast<std::uint8_t*>(upload_.ptr) + at, w.data, w.bytes);
    at += staged_size(w.bytes);
    sig.push_back(static_cast<CudaBufferImpl*>(w.buffer)->ptr + w.offset);
    sig.push_back(w.bytes);
  }
  sig.push_back(~std::uint64_t{0});  // writes | reads
  for (const HostReadOp& r : reads) {
    sig.push_back(static_cast<CudaBufferImpl*>(r.buffer)->ptr + r.offset);
    sig.push_back(r.bytes);
  }
  upload_head_ = up;  // until the sync below, the staged data is in use
  ++enqueued_;        // after the waits above, which complete everything enqueued before
  const bool repeated = sig == batch->trip_signature;
  if (!repeated && batch->trip_exec) {
    // Made for other buffers, sizes or staging: it will not be replayed again.
    fn_.cuGraphExecDestroy(batch->trip_exec);
    batch->trip_exec = nullptr;
  }
  if (repeated && !batch->trip_exec) {
    batch->trip_exec = capture([&] { enqueue_trip(*batch, writes, reads, by_kernel); });
    batch->trip_graph_failed = !batch->trip_exec;
  }
  if (repeated && batch->trip_exec) {
    check(fn_.cuGraphLaunch(batch->trip_exec, stream_), "cuGraphLaunch");
  } else {
    enqueue_trip(*batch, writes, reads, by_kernel);
    batch->trip_signature = sig;
  }
  sync(deadline, "waiting for a round trip's work");
  at = 0;
  for (const HostReadOp& r : reads) {
    std::memcpy(r.out, static_cast<std::uint8_t*>(download_.ptr) + at, r.bytes);
    at += staged_size(r.bytes);
  }
}

// Large trips. The caller's memory is pageable; the copy engines need pinned memory. Two ways:
//  - register the caller's arrays (cuMemHostRegister) and DMA from them directly: no host copy,
//    but registering pins and maps every page on each call (an IOMMU/page-table walk costing
//    about as much as copying the bytes) and must be undone after, and a registration cannot
//    be kept across calls: vgpu never knows when the caller frees or reuses that memory;
//  - copy through the pinned staging ring (as small trips do), in chunks, queueing each
//    chunk's DMA as soon as its host copy is done, so the copy engine moves chunk i while this
//    thread copies chunk i+1 (and the reverse on the way back, an event per chunk).
// The second is taken for pageable memory: each direction then costs about max(host copy, DMA) plus one chunk
// (each chunk's host copy on up to 4 cores: copy_chunk),
// the same bound as the driver's own pageable path (what torch's .cuda()/.cpu() use), with no
// per-call pinning; before it, a trip paid the host copy and the DMA one after the other
// (N=1024 matmul on the H200: 1.39 ms against torch's 1.24 ms). No graph: the host copies sit
// between the DMAs, and a graph's launch saving (µs) is nothing at these sizes.
// Memory the driver has page-locked already (an Array over it keeps it registered, or it was
// allocated pinned: torch's pin_memory) needs neither: its copies DMA from and to it directly,
// at the link's rate, and the trip's closing sync covers them.
void CudaDevice::pipelined_trip(std::span<const HostWriteOp> writes, CudaBatchImpl* batch,
                                std::span<const HostReadOp> reads, const Deadline& deadline) {
  std::uint64_t up = 0, down = 0, down_plain = 0;
  for (const HostWriteOp& w : writes) up += staged_size(w.bytes);
  for (const HostReadOp& r : reads) {
    down += staged_size(r.bytes);
    down_plain += r.bytes;
  }
  make_current();
  // The trip's data sits at offset 0 of both rings (as in round_trip): nothing queued may still
  // read the upload ring.
  if (upload_head_ != 0) sync(deadline, "waiting for queued uploads to free the staging ring");
  reserve(upload_, up, deadline);
  reserve(download_, down, deadline);
  const std::uint64_t down_chunk = chunk_for(down_plain);
  std::size_t events = 0;
  for (const HostReadOp& r : reads) events += (r.bytes + down_chunk - 1) / down_chunk;
  while (chunk_events_.size() < events) {  // created once for the largest trip, then reused
    CUevent e = nullptr;
    check(fn_.cuEventCreate(&e, CU_EVENT_DISABLE_TIMING), "cuEventCreate");
    chunk_events_.push_back(e);
  }
  upload_head_ = up;  // until the stream is idle again, the staged data is in use
  ++enqueued_;        // after the waits above, which complete everything enqueued before
  std::uint64_t up_plain = 0;
  for (const HostWriteOp& w : writes) up_plain += w.bytes;
  const std::uint64_t up_chunk = chunk_for(up_plain);
  std::uint64_t at = 0;
  for (const HostWriteOp& w : writes) {
    const CUdeviceptr dst = static_cast<CudaBufferImpl*>(w.buffer)->ptr + w.offset;
    if (page_locked(w.data, w.bytes)) {  // DMA'd from where it is (the trip waits before returning)
      check(fn_.cuMemcpyHtoDAsync(dst, w.data, w.bytes, stream_), "cuMemcpyHtoDAsync");
      at += staged_size(w.bytes);
      continue;
    }
    auto* staged = static_cast<std::uint8_t*>(upload_.ptr) + at;
    for (std::uint64_t off = 0; off < w.bytes; off += up_chunk) {
      const std::uint64_t len = std::min(up_chunk, w.bytes - off);
      copy_chunk(staged + off, static_cast<const std::uint8_t*>(w.data) + off, len);
      check(fn_.cuMemcpyHtoDAsync(dst + off, staged + off, len, stream_), "cuMemcpyHtoDAsync");
    }
    at += staged_size(w.bytes);
  }
  if (batch) {
    // As submit() would (a one-launch batch or the first submission launches directly).
    if (batch->exec && graphs())
      check(fn_.cuGraphLaunch(batch->exec, stream_), "cuGraphLaunch");
    else
      launch(*batch);
  }
  std::size_t e = 0;
  at = 0;
  // Readbacks into page-locked memory land where they go: the final sync covers them.
  std::vector<bool> direct(reads.size());
  for (std::size_t i = 0; i < reads.size(); ++i) direct[i] = page_locked(reads[i].out, reads[i].bytes);
  for (std::size_t i = 0; i < reads.size(); ++i) {
    const HostReadOp& r = reads[i];
    const CUdeviceptr src = static_cast<CudaBufferImpl*>(r.buffer)->ptr + r.offset;
    if (direct[i]) {
      check(fn_.cuMemcpyDtoHAsync(r.out, src, r.bytes, stream_), "cuMemcpyDtoHAsync");
      at += staged_size(r.bytes);
      continue;
    }
    for (std::uint64_t off = 0; off < r.bytes; off += down_chunk) {
      const std::uint64_t len = std::min(down_chunk, r.bytes - off);
      check(fn_.cuMemcpyDtoHAsync(static_cast<std::uint8_t*>(download_.ptr) + at + off, src + off, len, stream_),
            "cuMemcpyDtoHAsync");
      check(fn_.cuEventRecord(chunk_events_[e++], stream_), "cuEventRecord");
    }
    at += staged_size(r.bytes);
  }
  e = 0;
  at = 0;
  for (std::size_t i = 0; i < reads.size(); ++i) {
    const HostReadOp& r = reads[i];
    if (direct[i]) {
      at += staged_size(r.bytes);
      continue;
    }
    for (std::uint64_t off = 0; off < r.bytes; off += down_chunk) {
      const std::uint64_t len = std::min(down_chunk, r.bytes - off);
      if (!try_wait_event(chunk_events_[e++], deadline)) {
        // As sync(): the stream still runs the work, so nothing it uses may be reused or freed.
        mark_lost(std::string("a wait for its stream ran past the ") + std::to_string(deadline.limit().count()) +
                  " ms limit while waiting for a round trip's readback, with the work still running");
        fail_timeout(info_, deadline, "waiting for a round trip's readback", true);
      }
      copy_chunk(static_cast<std::uint8_t*>(r.out) + off, static_cast<const std::uint8_t*>(download_.ptr) + at + off,
                 len);
    }
    at += staged_size(r.bytes);
  }
  // Everything queued has run once the last readback's event fired (one stream, in order); this
  // also retires the serials and frees the upload ring. Returns at once.
  sync(deadline, "waiting for a round trip's work");
}

bool CudaDevice::try_wait_event(CUevent event, const Deadline& deadline) {
  // The test hook, as in try_sync: a simulated loss reports the sticky error a fault would.
  if (take_injected_loss()) check(CUDA_ERROR_ILLEGAL_ADDRESS, "cuEventQuery (simulated loss)");
  if (!deadline.limited()) {
    check(fn_.cuEventSynchronize(event), "cuEventSynchronize");
    return true;
  }
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    const CUresult r = fn_.cuEventQuery(event);
    if (r == CUDA_SUCCESS) return true;
    if (r != CUDA_ERROR_NOT_READY) check(r, "cuEventQuery");
    if (deadline.expired()) return false;
    // A chunk's DMA takes tens of microseconds; the kernel before the first readback may take long.
    pause_while_polling(start);
  }
}

}  // namespace vgpu::cuda
