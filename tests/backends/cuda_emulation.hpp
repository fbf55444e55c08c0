// SPDX-License-Identifier: Apache-2.0
// tests/backends/cuda_emulation.hpp — what the CUDA kernel emulators (cuda_matmul_emulated.cpp,
// cuda_mma_emulated.cpp) share: the CUDA keywords and built-ins a kernel source needs to compile
// as host C++, a launcher that runs each block's threads as std::threads (blocks one after
// another; __syncthreads a std::barrier of the block; __shared__ arrays function statics), the
// cp.async groups landing as late as the hardware may, and the exact product they check against.
// Include it before the kernel's .cu; one emulator per program (the globals are its own).
#pragma once

#include <barrier>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <deque>
#include <functional>
#include <thread>
#include <utility>
#include <vector>

struct float2 {
  float x, y;
};
struct float4 {
  float x, y, z, w;
};
inline float2 make_float2(float a, float b) { return {a, b}; }
inline float4 make_float4(float a, float b, float c, float d) { return {a, b, c, d}; }
struct Dim3 {
  unsigned x = 0, y = 0, z = 0;
};
inline thread_local Dim3 threadIdx, blockIdx;
inline Dim3 blockDim, gridDim;
inline std::barrier<>* g_block_barrier = nullptr;
inline void __syncthreads() { g_block_barrier->arrive_and_wait(); }
#define __global__
#define __device__
#define __forceinline__ inline
#define __restrict__
#define __launch_bounds__(...)
#define __shared__ static
#define __align__(n) __attribute__((aligned(n)))

namespace emulation {

// cp.async, emulated as late as the hardware may land it: a copy is only queued at issue, and a
// thread's committed groups land, oldest first, when its wait_group lets no more than n stay in
// flight. So a kernel that reads a stage before waiting for it, or refills a stage its block may
// still be reading, computes wrong values here, where a copy made at issue would hide the race.
// (Sources are read at landing: the kernels' inputs are read-only.) inside false: 16 zero bytes.
struct PendingCopy {
  void* dst;
  const void* src;
  bool inside;
};
inline thread_local std::vector<PendingCopy> open_group;
inline thread_local std::deque<std::vector<PendingCopy>> committed_groups;
inline void copy16(void* dst, const void* src, bool inside) { open_group.push_back({dst, src, inside}); }
inline void commit() { committed_groups.push_back(std::move(open_group)), open_group.clear(); }
inline void wait_until(std::size_t in_flight) {
  while (committed_groups.size() > in_flight) {
    for (const PendingCopy& c : committed_groups.front()) {
      if (c.inside)
        std::memcpy(c.dst, c.src, 16);
      else
        std::memset(c.dst, 0, 16);
    }
    committed_groups.pop_front();
  }
}

// Runs kernel over a grid of gx × gy × gz blocks of tx × ty threads, each thread a std::thread
// with its threadIdx and blockIdx set, the blocks one after another.
inline void launch(unsigned gx, unsigned gy, unsigned tx, unsigned ty, const std::function<void()>& kernel,
                   unsigned gz = 1) {
  blockDim = {tx, ty, 1};
  gridDim = {gx, gy, gz};
  std::barrier<> barrier(tx * ty);
  g_block_barrier = &barrier;
  for (unsigned bz = 0; bz < gz; ++bz)
    for (unsigned by = 0; by < gy; ++by)
      for (unsigned bx = 0; bx < gx; ++bx) {
        std::vector<std::thread> threads;
        for (unsigned y = 0; y < ty; ++y)
          for (unsigned x = 0; x < tx; ++x)
            threads.emplace_back([&kernel, x, y, bx, by, bz] {
              threadIdx = {x, y, 0};
              blockIdx = {bx, by, bz};
              kernel();
            });
        for (std::thread& t : threads) t.join();
      }
}

// C[i][j] of row-major a (m×k) · b (k×n) in double, and Σ|a||b| over the same terms.
inline std::pair<double, double> exact_dot(const float* a, const float* b, unsigned i, unsigned j, unsigned k,
                                           unsigned n) {
  double ref = 0, mag = 0;
  for (unsigned q = 0; q < k; ++q) {
    const double t = double(a[std::size_t{i} * k + q]) * b[std::size_t{q} * n + j];
    ref += t;
    mag += std::fabs(t);
  }
  return {ref, mag};
}

}  // namespace emulation
