// SPDX-License-Identifier: Apache-2.0
// tests/backends/cuda_wgmma_emulated.cpp — needs no GPU: runs core/kernels/cuda/matmul_wgmma.cu
// (the Hopper warpgroup-MMA matmul), built with one tiling's VGPU_WG_* defines (tests/CMakeLists.txt:
// one program per matmul_wgmma entry of VGPU_CUDA_PRECOMPILED), on the CPU, and checks every element
// of C against a double-precision sum of the 16-bit inputs at awkward and aligned shapes. So a
// wrong swizzle, descriptor, fragment map, pipeline slot or edge case in the kernel fails here,
// where no Hopper GPU runs it.
// Emulation (cuda_emulation.hpp): one std::thread per CUDA thread, blocks one after another. The
// PTX primitives are the kernel's VGPU_WG_SHIMS hooks, defined here by their PTX ISA semantics:
//  - cp.async lands as late as the hardware may (at the thread's wait_group);
//  - wgmma.mma_async runs as late as the hardware may: it is queued at issue and runs, reading
//    shared memory then, when the thread's wgmma.wait_group lets no more groups stay in flight.
//    So refilling a stage a warpgroup's wgmma may still read computes wrong values here. Each
//    thread computes its own accumulators (the m64nNk16 D fragment) from the operands its
//    descriptors name: the start address, LBO and SBO decoded from the 64-bit descriptor and the
//    canonical 128-byte-swizzle layouts of the PTX ISA ("Shared Memory Matrix Layout": A
//    K-major, B N-major) applied independently of the kernel's own swizzle function; products
//    exact, summed in double, rounded to float once per wgmma;
//  - mbarriers (VGPU_WG_SPECIALIZED) count arrivals and complete phases under one lock; a
//    cp.async arrival lands the thread's copies first;
//  - fences are no-ops (the emulation has one memory);
//  - cvt rounds as vgpu/half.hpp (nearest even).
#include <cstdint>
#include <cstdio>
#include <algorithm>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <random>
#include <span>
#include <vector>

#include "cuda_emulation.hpp"
#include "vgpu/half.hpp"

#define __CUDA_ARCH__ 900
#define VGPU_WG_SHIMS 1
#define __constant__
using std::min;

// ---- the kernel's hooks -----------------------------------------------------------------
unsigned char* dynamic_smem();
inline unsigned smem_addr(const void* p) { return static_cast<unsigned>(reinterpret_cast<std::uintptr_t>(p)); }
inline void cp_async16(void* dst, const void* src, bool inside) { emulation::copy16(dst, src, inside); }
inline void cp_async_commit() { emulation::commit(); }
template <int N>
void cp_async_wait() {
  emulation::wait_until(std::size_t{N});
}
inline void fence_proxy_async() {}
template <class T>
void fence_operands(T&) {}
inline void wgmma_fence() {}

struct PendingMma {
  float* d;
  unsigned regs;
  unsigned long long a, b;
};
inline thread_local std::vector<PendingMma> open_mmas;
inline thread_local std::deque<std::vector<PendingMma>> committed_mmas;
void run_mma(const PendingMma& op);
template <unsigned N>
void wgmma(float (&d)[N], unsigned long long a, unsigned long long b) {
  open_mmas.push_back({d, N, a, b});
}
inline void wgmma_commit() { committed_mmas.push_back(std::move(open_mmas)), open_mmas.clear(); }
template <int N>
void wgmma_wait() {
  while (committed_mmas.size() > std::size_t{N}) {
    for (const PendingMma& op : committed_mmas.front()) run_mma(op);
    committed_mmas.pop_front();
  }
}

// mbarriers (the specialized form): arrivals counted under one lock, waiters woken when a
// phase completes; try_wait.parity P holds once the phase of parity P has completed, i.e. while
// the current phase's parity differs from P. A cp.async arrival lands the thread's copies first.
struct EmulatedBarrier {
  unsigned expected = 0, arrived = 0, phases = 0;
};
inline std::mutex g_barrier_mutex;
inline std::condition_variable g_barrier_cv;
inline std::map<const void*, EmulatedBarrier> g_barriers;
inline void mbar_init(unsigned long long* bar, unsigned count) {
  std::lock_guard<std::mutex> lock(g_barrier_mutex);
  g_barriers[bar] = EmulatedBarrier{count, 0, 0};
}
inline void mbar_arrive(unsigned long long* bar) {
  std::lock_guard<std::mutex> lock(g_barrier_mutex);
  EmulatedBarrier& b = g_barriers.at(bar);
  if (++b.arrived == b.expected) {
    b.arrived = 0;
    ++b.phases;
    g_barrier_cv.notify_all();
  }
}
inline void mbar_wait(unsigned long long* bar, unsigned parity) {
  std::unique_lock<std::mutex> lock(g_barrier_mutex);
  g_barrier_cv.wait(lock, [&] { return (g_barriers.at(bar).phases & 1u) != parity; });
}
inline void cp_async_arrive(unsigned long long* bar) {
  emulation::commit();
  emulation::wait_until(0);
  mbar_arrive(bar);
}

inline float from16(unsigned short h) {
#if VGPU_WG_BF16
  return vgpu::bf16_bits_to_float(h);
#else
  return vgpu::half_bits_to_float(h);
#endif
}
inline unsigned short to16(float f) {
#if VGPU_WG_BF16
  return vgpu::float_to_bf16_bits(f);
#else
  return vgpu::float_to_half_bits(f);
#endif
}
// cvt.rn.{f16,bf16}x2.f32: lo in the low half.
inline unsigned narrow2(float lo, float hi) { return to16(lo) | (unsigned{to16(hi)} << 16); }

#include "../../core/kernels/cuda/matmul_wgmma.cu"

// The block's dynamic shared memory (1024 bytes more than the kernel needs, as on the GPU the
// kernel aligns its first stage itself).
alignas(16) unsigned char g_smem[SMEM_BYTES];
unsigned char* dynamic_smem() { return g_smem; }

// The 16-bit element at shared address addr (the 18 address bits a descriptor holds) after the
// 128-byte swizzle: bits 4-6 of the address XORed with bits 7-9.
float shared_at(unsigned addr) {
  addr ^= ((addr >> 7) & 7u) << 4;
  const unsigned base = smem_addr(g_smem) & 0x3ffffu;
  const unsigned offset = (addr - base) & 0x3ffffu;
  if (offset + 2 > sizeof g_smem) {
    std::printf("  a descriptor addresses shared byte %u, past the block's %zu\n", offset, sizeof g_smem);
    std::abort();
  }
  unsigned short h;
  std::memcpy(&h, g_smem + offset, 2);
  return from16(h);
}

struct Descriptor {
  unsigned start, lbo, sbo, mode;
};
Descriptor decode(unsigned long long d) {
  const Descriptor r{static_cast<unsigned>(d & 0x3fffu) << 4, static_cast<unsigned>((d >> 16) & 0x3fffu) << 4,
                     static_cast<unsigned>((d >> 32) & 0x3fffu) << 4, static_cast<unsigned>(d >> 62)};
  if (r.mode != 1 || ((d >> 49) & 7u) != 0) {
    std::printf("  descriptor %#llx: only the 128-byte swizzle with base offset 0 is emulated\n", d);
    std::abort();
  }
  return r;
}

// One wgmma.m64nNk16 for this thread: A (64×16) K-major at ((8,m),(T,2)):((8T,SBO),(1,T)),
// B (16×N) N-major at ((T,8,n),(8,k)):((1,T,LBO),(8T,SBO)), T = 8 elements (16 bytes).
void run_mma(const PendingMma& op) {
  const Descriptor a = decode(op.a), b = decode(op.b);
  const unsigned t = threadIdx.x % 128, warp = t / 32, lane = t % 32;
  for (unsigned i = 0; i < op.regs; ++i) {
    const unsigned row = 16 * warp + lane / 4 + 8 * ((i / 2) % 2), col = 8 * (i / 4) + 2 * (lane % 4) + i % 2;
    double sum = op.d[i];
    for (unsigned k = 0; k < 16; ++k) {
      const float x = shared_at(a.start + (row / 8) * a.sbo + (row % 8) * 128 + k * 2);
      const float y = shared_at(b.start + (col / 64) * b.lbo + (col % 64) * 2 + (k % 8) * 128 + (k / 8) * b.sbo);
      sum += double(x) * y;
    }
    op.d[i] = static_cast<float>(sum);
  }
}

namespace {

float representable(float v) { return from16(to16(v)); }

// Runs C = A·B (m×k · k×n) through the kernel with its data offset elements into their buffers
// (offset 1 breaks the 16-byte alignment: the element-wise fill); returns whether every element
// is within float32's worst case plus the one rounding of a 16-bit result of the double sum.
// Built with VGPU_MM_BATCH=1: a stack of three A matrices times one B (broadcast), in two
// launches (z = 2 from product 0, z = 1 from product 2), as batched_matmul.cpp plans a stack
// past the z-limit.
bool check(unsigned m, unsigned k, unsigned n, unsigned offset) {
  constexpr unsigned count = VGPU_MM_BATCH ? 3 : 1;
  std::vector<float> a(std::size_t{count} * m * k), b(std::size_t{k} * n);
  std::mt19937 gen(m * 131 + k * 7 + n);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (float& v : a) v = representable(dist(gen));
  for (float& v : b) v = representable(dist(gen));
  std::vector<elem_t> A(a.size() + offset), B(b.size() + offset), C(std::size_t{count} * m * n + offset, to16(NAN));
  for (std::size_t i = 0; i < a.size(); ++i) A[offset + i] = to16(a[i]);
  for (std::size_t i = 0; i < b.size(); ++i) B[offset + i] = to16(b[i]);
  std::memset(g_smem, 0xff, sizeof g_smem);  // poisoned: a read of a stage never filled is a NaN
  auto run = [&](const MatmulParams& p, unsigned products) {
    emulation::launch((n + BN - 1) / BN, (m + BM - 1) / BM, THREADS, 1,
                      [&] { vgpu_matmul_wgmma(A.data() + offset, B.data() + offset, C.data() + offset, p); }, products);
  };
#if VGPU_MM_BATCH
  run(MatmulParams{m, n, k, 0, 0, count, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0}, 2);
  run(MatmulParams{m, n, k, 0, 2, count, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0}, 1);
#else
  run(MatmulParams{m, n, k, 0}, 1);
#endif
  const double u = VGPU_WG_BF16 ? 0x1p-8 : 0x1p-11;
  unsigned bad = 0;
  for (unsigned z = 0; z < count; ++z)
    for (unsigned i = 0; i < m; ++i)
      for (unsigned j = 0; j < n; ++j) {
        const auto [ref, mag] = emulation::exact_dot(a.data() + std::size_t{z} * m * k, b.data(), i, j, k, n);
        const double bound32 = 2.0 * k * 0x1p-23 * mag;
        const double bound = bound32 + u * (std::fabs(ref) + bound32) + (VGPU_WG_BF16 ? 0.0 : 0x1p-25) + 1e-30;
        const double got = from16(C[offset + (std::size_t{z} * m + i) * n + j]);
        if (!(std::fabs(got - ref) <= bound) && bad++ < 3)
          std::printf("  C[%u][%u][%u] = %.9g, want %.9g ± %.3g\n", z, i, j, got, ref, bound);
      }
  std::printf("%s %ux%u·%ux%u%s%s: %s\n", VGPU_EMULATED_TILING, m, k, k, n, offset ? " (unaligned)" : "",
              VGPU_MM_BATCH ? " (stack of 3, B broadcast)" : "", bad ? "WRONG" : "ok");
  return bad == 0;
}

}  // namespace

int main() {
  struct Shape {
    unsigned m, k, n, offset;
  };
  // Awkward: 1-wide, partial blocks in every dimension, k and n off the 16-byte chunks (the
  // element-wise fill); aligned: whole and partial blocks on the cp.async path, a K that ends
  // inside a step (zero-filled chunks), 1-2 steps (fewer than the pipeline's stages), 9 steps
  // (every stage refilled twice while wgmmas are in flight), B tiles whose second 64-column
  // block is partly or wholly past N, then an aligned shape at an odd offset, and a grid of 9
  // tile-rows (a whole group of 8 in the kernel's tile order, then a partial one).
  const Shape shapes[] = {{1, 1, 1, 0},      {17, 100, 17, 0},   {1, 17, 300, 0},  {130, 1, 17, 0},
                          {129, 33, 131, 0}, {128, 128, 256, 0}, {96, 40, 72, 0},  {130, 200, 136, 0},
                          {64, 8, 64, 0},    {130, 520, 264, 0}, {70, 576, 40, 0}, {128, 96, 64, 1},
                          {64, 300, 200, 1}, {1100, 16, 300, 0}};
  const Shape stacked[] = {{17, 100, 17, 0}, {129, 200, 131, 0}, {96, 40, 72, 0}, {128, 96, 64, 1}};
  bool ok = true;
  for (const Shape& s : VGPU_MM_BATCH ? std::span<const Shape>(stacked) : std::span<const Shape>(shapes))
    ok = check(s.m, s.k, s.n, s.offset) && ok;
  return ok ? 0 : 1;
}
