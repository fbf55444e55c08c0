// SPDX-License-Identifier: Apache-2.0
// tests/backends/cuda_matmul_emulated.cpp — needs no GPU: runs core/kernels/cuda/matmul.cu, built with one
// tiling's VGPU_MM_* defines (tests/CMakeLists.txt: one program per matmul entry of
// VGPU_CUDA_PRECOMPILED), on the CPU, and checks every element of C against a double-precision
// sum at awkward and aligned shapes. So a wrong index in the kernel (warp tiling, edge path,
// double buffer) fails here, on machines where the conformance suite's CUDA cases cannot run.
// Emulation: one std::thread per CUDA thread; __syncthreads is a std::barrier of the block;
// the kernel's __shared__ arrays become function statics, which the block's threads share
// (blocks run one after another). The kernel may use only what the shims below define: a
// kernel that gains CUDA intrinsics must add them here too.
#include <algorithm>
#include <barrier>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <random>
#include <thread>
#include <vector>

struct float4 {
  float x, y, z, w;
};
inline float4 make_float4(float a, float b, float c, float d) { return {a, b, c, d}; }
struct Dim3 {
  unsigned x = 0, y = 0, z = 0;
};
thread_local Dim3 threadIdx, blockIdx;
Dim3 blockDim;
std::barrier<>* g_block_barrier = nullptr;
inline void __syncthreads() { g_block_barrier->arrive_and_wait(); }
#define __global__
#define __device__
#define __forceinline__ inline
#define __restrict__
#define __launch_bounds__(threads, blocks)
#define __shared__ static
#define __align__(n) __attribute__((aligned(n)))

// cp.async (VGPU_MM_STAGES tilings), emulated as late as the hardware may land it: a copy is
// only queued at issue, and a thread's committed groups land, oldest first, when its wait_group
// lets no more than N stay in flight. So a kernel that reads a stage before waiting for it, or
// refills a stage its block may still be reading, computes wrong values here, where a copy made
// at issue would hide the race. (Sources are read at landing: A and B are read-only.)
#define VGPU_MM_ASYNC_SHIMS 1
struct PendingCopy {
  float* dst;
  const float* src;
};
thread_local std::vector<PendingCopy> g_open_group;
thread_local std::deque<std::vector<PendingCopy>> g_committed_groups;
inline void vgpu_cp_async16(float* smem, const float* gmem) { g_open_group.push_back({smem, gmem}); }
inline void vgpu_cp_async_commit() { g_committed_groups.push_back(std::move(g_open_group)), g_open_group.clear(); }
template <int N>
void vgpu_cp_async_wait() {
  while (g_committed_groups.size() > std::size_t{N}) {
    for (const PendingCopy& c : g_committed_groups.front()) std::memcpy(c.dst, c.src, 16);
    g_committed_groups.pop_front();
  }
}

#include "../../core/kernels/cuda/matmul.cu"

namespace {

// Runs C = A·B (m×k · k×n) through the kernel with its data offset floats into their buffers
// (offset 1 breaks the 16-byte alignment, so every block takes the checked path); returns
// whether every element is within 2·k·eps32·Σ|a||b| of the double-precision sum.
bool check(unsigned m, unsigned k, unsigned n, unsigned offset) {
  std::vector<float> A(std::size_t{m} * k + offset), B(std::size_t{k} * n + offset),
      C(std::size_t{m} * n + offset, NAN);
  std::mt19937 gen(m * 131 + k * 7 + n);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (float& v : A) v = dist(gen);
  for (float& v : B) v = dist(gen);
  const float *a = A.data() + offset, *b = B.data() + offset;
  float* c = C.data() + offset;
  constexpr unsigned tx = VGPU_MM_BN / VGPU_MM_TN, ty = VGPU_MM_BM / VGPU_MM_TM;
  blockDim = {tx, ty, 1};
  std::barrier<> barrier(tx * ty);
  g_block_barrier = &barrier;
  const MatmulParams p{m, n, k, 0};
  for (unsigned by = 0; by < (m + VGPU_MM_BM - 1) / VGPU_MM_BM; ++by)
    for (unsigned bx = 0; bx < (n + VGPU_MM_BN - 1) / VGPU_MM_BN; ++bx) {
      std::vector<std::thread> threads;
      for (unsigned y = 0; y < ty; ++y)
        for (unsigned x = 0; x < tx; ++x)
          threads.emplace_back([=] {
            threadIdx = {x, y, 0};
            blockIdx = {bx, by, 0};
            vgpu_matmul(a, b, c, p);
          });
      for (std::thread& t : threads) t.join();
    }
  unsigned bad = 0;
  for (unsigned i = 0; i < m; ++i)
    for (unsigned j = 0; j < n; ++j) {
      double ref = 0, mag = 0;
      for (unsigned q = 0; q < k; ++q) {
        const double t = double(a[std::size_t{i} * k + q]) * b[std::size_t{q} * n + j];
        ref += t;
        mag += std::fabs(t);
      }
      const double got = c[std::size_t{i} * n + j];
      if (!(std::fabs(got - ref) <= 2.0 * k * 1.1920929e-7 * mag + 1e-30) && bad++ < 3)
        std::printf("  C[%u][%u] = %.9g, want %.9g\n", i, j, got, ref);
    }
  std::printf("%s %ux%u·%ux%u%s: %s\n", VGPU_EMULATED_TILING, m, k, k, n, offset ? " (unaligned)" : "",
              bad ? "WRONG" : "ok");
  return bad == 0;
}

}  // namespace

int main() {
  struct Shape {
    unsigned m, k, n, offset;
  };
  // Awkward: 1-wide, partial blocks in every dimension, k not a multiple of BK, n not of 4, a
  // long K (4097: many double-buffer steps and a partial last one); aligned: whole blocks on the
  // float4 path with several K steps (256×512·512×256 fills even a 256×128 block), then the same
  // product unaligned; then whole blocks with 1-3 K steps of 8 (fewer steps than a cp.async
  // pipeline has stages: its prologue and empty groups).
  const Shape shapes[] = {{1, 1, 1, 0},      {17, 1000, 17, 0}, {1, 17, 1000, 0},   {1000, 1, 17, 0},
                          {129, 33, 131, 0}, {300, 4097, 5, 0}, {256, 512, 256, 0}, {256, 64, 256, 1},
                          {256, 8, 256, 0},  {256, 16, 256, 0}, {256, 24, 256, 0}};
  bool ok = true;
  for (const Shape& s : shapes) ok = check(s.m, s.k, s.n, s.offset) && ok;
  return ok ? 0 : 1;
}
