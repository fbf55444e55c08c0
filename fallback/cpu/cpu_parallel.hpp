// SPDX-License-Identifier: Apache-2.0
// fallback/cpu/cpu_parallel.hpp — the one way built-in kernels start nested parallel work.
// Defined in a baseline-compiled TU so the per-ISA kernel TUs never instantiate oneTBB
// templates themselves: an inline TBB helper compiled with -mavx512f could otherwise be the
// copy the linker keeps for every caller (see kernels/simd.hpp).
// Thread-safety: both functions are safe to call from any thread, including TBB workers.
#pragma once

#include <cstddef>

namespace vgpu::cpu {

/// Returns how many threads a parallel loop started from the calling thread can use.
std::size_t parallelism() noexcept;

/// Calls body(ctx, i) for every i in [0, n), in parallel on the TBB pool (one task per i: make
/// each call worth one, tens of microseconds), and returns when
/// all calls have finished; rethrows the first exception a call throws. Nesting inside a
/// dispatch's own parallel loop is fine (TBB schedules both on one pool).
/// Isolated: while the caller waits, its thread runs only this loop's calls, never an outer
/// task (say, another workgroup of the dispatch), so a kernel may share its own thread-local
/// scratch with the loop's calls for the loop's whole duration.
void parallel_for(std::size_t n, void (*body)(void* ctx, std::size_t i), void* ctx);

/// Returns the size in bytes of one data cache of the given level (1, 2 or 3) as the OS reports
/// it for CPU 0 (the platform layer: cpuinfo), else a safe default
/// (48 KiB, 1 MiB, 16 MiB); read once per process, as blocking sizes derive from it per call.
std::size_t cache_bytes(int level) noexcept;

}  // namespace vgpu::cpu
