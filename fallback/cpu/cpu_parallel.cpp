// SPDX-License-Identifier: Apache-2.0
// fallback/cpu/cpu_parallel.cpp — nested parallel loops for built-in kernels, on oneTBB.
#include "cpu_parallel.hpp"

#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/task_arena.h>

namespace vgpu::cpu {

std::size_t parallelism() noexcept {
  const int n = tbb::this_task_arena::max_concurrency();
  return n > 0 ? static_cast<std::size_t>(n) : 1;
}

void parallel_for(std::size_t n, void (*body)(void* ctx, std::size_t i), void* ctx) {
  tbb::parallel_for(std::size_t{0}, n, [&](std::size_t i) { body(ctx, i); });
}

}  // namespace vgpu::cpu
