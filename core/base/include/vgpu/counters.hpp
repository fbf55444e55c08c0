// SPDX-License-Identifier: Apache-2.0
// vgpu/counters.hpp — observable steady-state counters.
#pragma once

#include "vgpu/export.hpp"

#include <atomic>
#include <cstdint>
#include <string>

namespace vgpu {

/// A point-in-time copy of a device's or the runtime's counters. A plain value.
struct VGPU_API CounterSnapshot {
  std::uint64_t compiles = 0;              ///< kernels actually compiled by a backend
  std::uint64_t l1_hits = 0;               ///< compile() answered from the in-RAM kernel cache
  std::uint64_t l1_misses = 0;             ///< compile() that had to build the kernel
  std::uint64_t l1_evictions = 0;          ///< kernels dropped from the in-RAM cache by its bound
  std::uint64_t persistent_evictions = 0;  ///< persistent kernels, queue pipelines dropped by a cache's bound
  std::uint64_t binds = 0;                 ///< binding sets created (descriptor sets, argument packs)
  std::uint64_t allocations = 0;           ///< device buffers allocated
  std::uint64_t allocated_bytes = 0;  ///< bytes of the device buffers allocated (recoveries' reallocations included)
  std::uint64_t freed_bytes = 0;      ///< bytes of device buffers freed (once the work that used them completed)
  std::uint64_t dispatches = 0;       ///< kernel dispatches executed
  std::uint64_t submits = 0;          ///< batches submitted (one or more dispatches each)
  std::uint64_t bytes_up = 0;         ///< host → device bytes
  std::uint64_t bytes_down = 0;       ///< device → host bytes
  std::uint64_t source_compiles = 0;  ///< run-time front-end compiles (GLSL → SPIR-V, NVRTC, GL shader)
  std::uint64_t l2_hits = 0;          ///< compiled artifacts loaded from the on-disk cache
  std::uint64_t l2_misses = 0;        ///< on-disk lookups that found no usable entry
  std::uint64_t l2_writes = 0;        ///< artifacts written to the on-disk cache
  std::uint64_t l2_rejected = 0;      ///< on-disk entries dropped (bad header/checksum, driver refused)
  std::uint64_t l3_hits = 0;          ///< kernels built from precompiled, embedded SPIR-V/fatbin
  std::uint64_t pipeline_builds = 0;  ///< pipelines/specialisations built from an already compiled module
  std::uint64_t device_losses = 0;    ///< times the device was found lost (driver report, timeout, test hook)
  std::uint64_t recoveries = 0;       ///< times the lost device was recreated and its live objects rebuilt
  std::uint64_t variant_measurements = 0;  ///< op variants (matmul tilings) timed on the device to choose one
  std::uint64_t variant_loads = 0;         ///< measured variant choices read back from the on-disk cache
  std::uint64_t timed_dispatches = 0;      ///< dispatches whose device time was read (Device::set_device_timing)
  std::uint64_t device_ns = 0;             ///< nanoseconds those dispatches ran, by the device's own timer

  /// Returns this minus an earlier snapshot, field by field.
  CounterSnapshot operator-(const CounterSnapshot& earlier) const noexcept;
  /// Returns the sum of two snapshots, field by field.
  CounterSnapshot operator+(const CounterSnapshot& other) const noexcept;
  /// Formats as "compiles=1 l1_hits=2 ...".
  std::string to_string() const;
  /// Returns allocated_bytes - freed_bytes: of a snapshot, the device buffer bytes alive when it
  /// was taken (of a difference of two snapshots, how much that grew; 0 when it shrank).
  std::uint64_t live_bytes() const noexcept {
    return allocated_bytes > freed_bytes ? allocated_bytes - freed_bytes : 0;
  }
};

/// Live counters, updated with relaxed atomics. Thread-safety: every member is safe to
/// update and read from any thread.
struct VGPU_API Counters {
  std::atomic<std::uint64_t> compiles{0}, l1_hits{0}, l1_misses{0}, l1_evictions{0}, persistent_evictions{0}, binds{0},
      allocations{0}, allocated_bytes{0}, freed_bytes{0}, dispatches{0}, submits{0}, bytes_up{0}, bytes_down{0},
      source_compiles{0}, l2_hits{0}, l2_misses{0}, l2_writes{0}, l2_rejected{0}, l3_hits{0}, pipeline_builds{0},
      device_losses{0}, recoveries{0}, variant_measurements{0}, variant_loads{0}, timed_dispatches{0}, device_ns{0};

  /// Returns a consistent-enough copy of all fields (each read is atomic).
  CounterSnapshot snapshot() const noexcept;
};

}  // namespace vgpu
