// SPDX-License-Identifier: Apache-2.0
// backends/cuda/cuda_round_trip.cpp — Device::round_trip on CUDA: uploads, the batch and the
// readbacks queued back to back with their staging at fixed offsets, so a repeated round trip
// is captured once into a graph and replayed with one cuGraphLaunch. Small trips (≤ 64 KiB
// each way) copy with the copy_segments kernel on device-mapped staging instead of memcpys:
// inside a graph a kernel follows a kernel far sooner than a memcpy node does.
#include <cstring>

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
  if (!use_graphs_ || !batch || batch->trip_graph_failed) {
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

}  // namespace vgpu::cuda
