// SPDX-License-Identifier: Apache-2.0
// fallback/cpu/cpu_memory.cpp — CPU "device" memory: aligned host allocations and memcpy.
#include <cstring>
#include <limits>
#include <new>
#include <string>

#include "cpu_device.hpp"
#include "vgpu/error.hpp"

namespace vgpu::cpu {
namespace {

/// 64 bytes: a cache line, and the widest (AVX-512) vector, so aligned loads are always legal
/// at a buffer's start and no two buffers share a cache line.
constexpr std::size_t kAlignment = 64;

/// Throws the out_of_memory error for a failed allocation of bytes.
[[noreturn]] void fail_alloc(std::uint64_t bytes) {
  fail(ErrorCategory::out_of_memory,
       "the CPU device could not allocate " + std::to_string(bytes) + " bytes of host memory.",
       "free buffers you no longer need, use smaller tensors, or raise the process memory limit (ulimit -v).");
}

}  // namespace

CpuBuffer::CpuBuffer(std::uint64_t bytes) : bytes_(bytes) {
  if (bytes > std::numeric_limits<std::size_t>::max()) fail_alloc(bytes);
  void* p = ::operator new (static_cast<std::size_t>(bytes), std::align_val_t{kAlignment}, std::nothrow);
  if (p == nullptr) fail_alloc(bytes);
  // Zeroed like a fresh GPU allocation under vgpu's contract, so no stale data leaks through.
  std::memset(p, 0, static_cast<std::size_t>(bytes));
  data_ = static_cast<std::byte*>(p);
}

CpuBuffer::~CpuBuffer() {
  if (owned_) ::operator delete (data_, std::align_val_t{kAlignment});
}

/// Wraps the caller's host memory (never copied, never freed here).
std::unique_ptr<BufferImpl> CpuDevice::import_host(void* data, std::uint64_t bytes) {
  return std::make_unique<CpuBuffer>(data, bytes);
}

/// Returns the buffer's host address: the CPU device's memory is the process's.
BufferAddress CpuDevice::address(BufferImpl& buffer) {
  return BufferAddress{static_cast<CpuBuffer&>(buffer).data(), BufferAddress::Space::host};
}

/// Allocates a zeroed, 64-byte-aligned host buffer; throws out_of_memory.
std::unique_ptr<BufferImpl> CpuDevice::create_buffer(std::uint64_t bytes) {
  try {
    return std::make_unique<CpuBuffer>(bytes);
  } catch (const std::bad_alloc&) {  // the small CpuBuffer object itself
    fail_alloc(bytes);
  }
}

/// Copies host bytes in (memcpy; no submitted work can still be running, so nothing waits).
void CpuDevice::write(BufferImpl& buffer, std::uint64_t offset, const void* data, std::uint64_t bytes,
                      const Deadline& /*deadline*/) {
  std::memcpy(static_cast<CpuBuffer&>(buffer).data() + offset, data, bytes);
}

/// Copies bytes out (memcpy; every submitted dispatch has already finished).
void CpuDevice::read(BufferImpl& buffer, std::uint64_t offset, void* out, std::uint64_t bytes,
                     const Deadline& /*deadline*/) {
  std::memcpy(out, static_cast<CpuBuffer&>(buffer).data() + offset, bytes);
}

/// Copies between buffers (memmove, so overlapping ranges of one buffer are fine).
void CpuDevice::copy(BufferImpl& src, std::uint64_t src_offset, BufferImpl& dst, std::uint64_t dst_offset,
                     std::uint64_t bytes, const Deadline& /*deadline*/) {
  // memmove: src and dst may be one buffer with overlapping ranges.
  std::memmove(static_cast<CpuBuffer&>(dst).data() + dst_offset, static_cast<CpuBuffer&>(src).data() + src_offset,
               bytes);
}

}  // namespace vgpu::cpu
