// SPDX-License-Identifier: Apache-2.0
// fallback/cpu/cpu_parallel.cpp — nested parallel loops for built-in kernels, on oneTBB.
#include "cpu_parallel.hpp"

#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/partitioner.h>
#include <oneapi/tbb/task_arena.h>

#include "vgpu/platform/system_info.hpp"

namespace vgpu::cpu {

std::size_t parallelism() noexcept {
  const int n = tbb::this_task_arena::max_concurrency();
  return n > 0 ? static_cast<std::size_t>(n) : 1;
}

void parallel_for(std::size_t n, void (*body)(void* ctx, std::size_t i), void* ctx) {
  // One task per call (simple_partitioner, grain 1): callers hand out a few dozen calls of tens of
  // microseconds each, sized so every thread gets several; the auto partitioner could bundle
  // them into fewer chunks than threads and leave cores idle for the first wave.
  tbb::this_task_arena::isolate([&] {
    tbb::parallel_for(
        tbb::blocked_range<std::size_t>(0, n, 1),
        [&](const tbb::blocked_range<std::size_t>& r) {
          for (std::size_t i = r.begin(); i < r.end(); ++i) body(ctx, i);
        },
        tbb::simple_partitioner());
  });
}

namespace {

/// The level's cache size from the platform layer (cpuinfo), else a safe default (48 KiB,
/// 1 MiB, 16 MiB) when the OS or an emulator will not say.
std::size_t read_cache_bytes(int level) noexcept {
  if (const std::size_t v = platform::cpu_cache_bytes(level)) return v;
  return level == 1 ? std::size_t{48} << 10 : level == 2 ? std::size_t{1} << 20 : std::size_t{16} << 20;
}

}  // namespace

std::size_t cache_bytes(int level) noexcept {
  static const std::size_t sizes[3] = {read_cache_bytes(1), read_cache_bytes(2), read_cache_bytes(3)};
  return level >= 1 && level <= 3 ? sizes[level - 1] : sizes[2];
}

}  // namespace vgpu::cpu
