// SPDX-License-Identifier: Apache-2.0
// tests/backends/cuda_mma_emulated.cpp — needs no GPU: runs core/kernels/cuda/matmul_mma.cu (the
// tensor-core matmul), built with one tiling's VGPU_MMA_* defines (tests/CMakeLists.txt: one
// program per matmul_mma entry of VGPU_CUDA_PRECOMPILED: float16, bfloat16 and TF32), on the
// CPU, and checks every element of C against a double-precision sum of the (rounded) inputs at
// awkward and aligned shapes. So a wrong index in the kernel (warp tiles, fragment maps, the
// cp.async pipeline, edge and element-wise paths) fails here, where no GPU runs it.
// Emulation (cuda_emulation.hpp): one std::thread per CUDA thread, blocks one after another;
// __syncthreads is a std::barrier of the block; __shared__ arrays become function statics. The
// PTX primitives are the kernel's VGPU_MMA_SHIMS hooks, defined here by their PTX ISA semantics:
//  - cp.async lands as late as the hardware may (at the thread's wait_group), so reading a stage
//    before waiting for it, or refilling one a warp still reads, computes wrong values here;
//  - ldmatrix and mma are warp-collective: each lane publishes its operands in its warp's
//    exchange slots, the warp meets at a barrier, each lane computes its own registers from all
//    32 lanes' (the fragment layouts of "Matrix Fragments for mma.m16n8k16 / m16n8k8"), and
//    meets again before the slots are reused;
//  - mma multiplies exactly and adds in double, rounded to float once per mma (the hardware's
//    float32 accumulation differs from it by far less than the bound checked);
//  - cvt rounds as vgpu/half.hpp (nearest even) and TF32 to nearest, ties away.
#include <array>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <random>
#include <span>
#include <vector>

#include "cuda_emulation.hpp"
#include "vgpu/half.hpp"

#define __CUDA_ARCH__ 800
#define VGPU_MMA_SHIMS 1

// ---- cp.async (the kernel's hooks) --------------------------------------------------------
template <class T>
void cp_async16(T* dst, const T* src, bool inside) {
  emulation::copy16(dst, src, inside);
}
inline void cp_async_commit() { emulation::commit(); }
template <int N>
void cp_async_wait() {
  emulation::wait_until(std::size_t{N});
}

// ---- warp collectives -------------------------------------------------------------------
struct LaneSlot {
  const unsigned short* addr = nullptr;
  unsigned a[4] = {}, b[2] = {};
};
constexpr unsigned kMaxWarps = 32;
std::array<std::array<LaneSlot, 32>, kMaxWarps> g_slots;
std::array<std::unique_ptr<std::barrier<>>, kMaxWarps> g_warp_barriers;
inline unsigned lane_id() { return threadIdx.x % 32; }
inline unsigned warp_id() { return threadIdx.x / 32; }
inline void warp_sync() { g_warp_barriers[warp_id()]->arrive_and_wait(); }

inline unsigned pack(unsigned short lo, unsigned short hi) { return lo | (unsigned{hi} << 16); }

// Matrix i (of 4) of an ldmatrix: its 8 row addresses come from lanes 8i..8i+7. Without trans,
// lane l gets row l/4, columns 2(l%4) and +1; with trans, rows 2(l%4) and +1 of column l/4.
inline void ldmatrix(unsigned (&r)[4], const unsigned short* p, bool trans) {
  auto& slots = g_slots[warp_id()];
  const unsigned l = lane_id();
  slots[l].addr = p;
  warp_sync();
  for (unsigned i = 0; i < 4; ++i) {
    auto at = [&](unsigned row, unsigned col) { return slots[8 * i + row].addr[col]; };
    r[i] = trans ? pack(at(2 * (l % 4), l / 4), at(2 * (l % 4) + 1, l / 4))
                 : pack(at(l / 4, 2 * (l % 4)), at(l / 4, 2 * (l % 4) + 1));
  }
  warp_sync();
}
inline void ldmatrix_x4(unsigned (&r)[4], const unsigned short* p) { ldmatrix(r, p, false); }
inline void ldmatrix_x4_trans(unsigned (&r)[4], const unsigned short* p) { ldmatrix(r, p, true); }

inline float from16(unsigned short h) {
#if VGPU_MMA_BF16
  return vgpu::bf16_bits_to_float(h);
#else
  return vgpu::half_bits_to_float(h);
#endif
}
inline float bits_float(unsigned u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// d += a·b over the warp: A (16×K) and B (K×8) gathered from every lane's fragments by at(lane,
// which, element) maps, each lane then computing its own four elements of D.
template <unsigned K, class AOf, class BOf>
void mma(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1, AOf a_of, BOf b_of) {
  auto& slots = g_slots[warp_id()];
  const unsigned l = lane_id();
  std::memcpy(slots[l].a, a, sizeof a);
  slots[l].b[0] = b0;
  slots[l].b[1] = b1;
  warp_sync();
  double A[16][K] = {}, B[K][8] = {};
  for (unsigned lane = 0; lane < 32; ++lane) {
    a_of(lane, slots[lane].a, A);
    b_of(lane, slots[lane].b, B);
  }
  warp_sync();
  const unsigned g = l / 4, t = l % 4;
  for (unsigned e = 0; e < 4; ++e) {
    const unsigned row = g + (e / 2) * 8, col = 2 * t + e % 2;
    double sum = d[e];
    for (unsigned k = 0; k < K; ++k) sum += A[row][k] * B[k][col];
    d[e] = static_cast<float>(sum);
  }
}

// m16n8k16 on 16-bit inputs: a0 (g, 2t..+1), a1 (g+8, 2t..), a2 (g, 2t+8..), a3 (g+8, 2t+8..);
// b0 (k 2t..+1, n g), b1 (k 2t+8..+9, n g); each register two 16-bit values, low half first.
inline void mma16816(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  mma<16>(
      d, a, b0, b1,
      [](unsigned lane, const unsigned* r, double(&A)[16][16]) {
        const unsigned g = lane / 4, t = lane % 4;
        for (unsigned i = 0; i < 4; ++i)
          for (unsigned h = 0; h < 2; ++h)
            A[g + (i % 2) * 8][2 * t + (i / 2) * 8 + h] = from16(static_cast<unsigned short>(r[i] >> (16 * h)));
      },
      [](unsigned lane, const unsigned* r, double(&B)[16][8]) {
        const unsigned g = lane / 4, t = lane % 4;
        for (unsigned i = 0; i < 2; ++i)
          for (unsigned h = 0; h < 2; ++h)
            B[2 * t + i * 8 + h][g] = from16(static_cast<unsigned short>(r[i] >> (16 * h)));
      });
}

// m16n8k8 on TF32: a0 (g, t), a1 (g+8, t), a2 (g, t+4), a3 (g+8, t+4); b0 (k t, n g), b1 (k t+4, n g).
inline void mma1688(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  mma<8>(
      d, a, b0, b1,
      [](unsigned lane, const unsigned* r, double(&A)[16][8]) {
        const unsigned g = lane / 4, t = lane % 4;
        for (unsigned i = 0; i < 4; ++i) A[g + (i % 2) * 8][t + (i / 2) * 4] = bits_float(r[i]);
      },
      [](unsigned lane, const unsigned* r, double(&B)[8][8]) {
        const unsigned g = lane / 4, t = lane % 4;
        B[t][g] = bits_float(r[0]);
        B[t + 4][g] = bits_float(r[1]);
      });
}

// cvt.rna.tf32.f32: to nearest, ties away from zero, 10 mantissa bits kept (finite inputs).
inline unsigned to_tf32(float x) {
  unsigned u;
  std::memcpy(&u, &x, 4);
  return (u + 0x1000u) & 0xffffe000u;
}

// cvt.rn.{f16,bf16}x2.f32: lo in the low half.
inline unsigned narrow2(float lo, float hi) {
#if VGPU_MMA_BF16
  return pack(vgpu::float_to_bf16_bits(lo), vgpu::float_to_bf16_bits(hi));
#else
  return pack(vgpu::float_to_half_bits(lo), vgpu::float_to_half_bits(hi));
#endif
}

#include "../../core/kernels/cuda/matmul_mma.cu"

namespace {

// v rounded to the kernel's input format (16-bit, or float32 for TF32: rounded inside).
float representable(float v) {
#if VGPU_MMA_TF32
  return v;
#elif VGPU_MMA_BF16
  return vgpu::bf16_bits_to_float(vgpu::float_to_bf16_bits(v));
#else
  return vgpu::half_bits_to_float(vgpu::float_to_half_bits(v));
#endif
}

elem_t encode(float v) {
#if VGPU_MMA_TF32
  return v;
#elif VGPU_MMA_BF16
  return vgpu::float_to_bf16_bits(v);
#else
  return vgpu::float_to_half_bits(v);
#endif
}

float decode(elem_t e) {
#if VGPU_MMA_TF32
  return e;
#else
  return from16(e);
#endif
}

// Runs C = A·B (m×k · k×n) through the kernel with its data offset elements into their buffers
// (offset 1 breaks the 16-byte alignment, so the tiles are filled element by element); returns
// whether every element is within float32's worst case, plus TF32's input rounding (TF32) or the
// one rounding of a 16-bit result, of the double-precision sum. Built with VGPU_MM_BATCH=1: a
// stack of three A matrices times one B (broadcast), in two launches (z = 2 from product 0,
// z = 1 from product 2), as batched_matmul.cpp plans a stack past the z-limit.
bool check(unsigned m, unsigned k, unsigned n, unsigned offset) {
  constexpr unsigned count = VGPU_MM_BATCH ? 3 : 1;
  std::vector<float> a(std::size_t{count} * m * k), b(std::size_t{k} * n);
  std::mt19937 gen(m * 131 + k * 7 + n);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (float& v : a) v = representable(dist(gen));
  for (float& v : b) v = representable(dist(gen));
  std::vector<elem_t> A(a.size() + offset), B(b.size() + offset), C(std::size_t{count} * m * n + offset, encode(NAN));
  for (std::size_t i = 0; i < a.size(); ++i) A[offset + i] = encode(a[i]);
  for (std::size_t i = 0; i < b.size(); ++i) B[offset + i] = encode(b[i]);
  for (unsigned w = 0; w < THREADS / 32; ++w) g_warp_barriers[w] = std::make_unique<std::barrier<>>(32);
  auto run = [&](const MatmulParams& p, unsigned products) {
    emulation::launch((n + BN - 1) / BN, (m + BM - 1) / BM, THREADS, 1,
                      [&] { vgpu_matmul_mma(A.data() + offset, B.data() + offset, C.data() + offset, p); }, products);
  };
#if VGPU_MM_BATCH
  // first, inner = 3 products, A's matrices one apart (a_inner 1), B repeated (b_inner 0).
  run(MatmulParams{m, n, k, 0, 0, count, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0}, 2);
  run(MatmulParams{m, n, k, 0, 2, count, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0}, 1);
#else
  run(MatmulParams{m, n, k, 0}, 1);
#endif
  const double u = VGPU_MMA_TF32 ? 0.0 : VGPU_MMA_BF16 ? 0x1p-8 : 0x1p-11;
  const double tf32 = VGPU_MMA_TF32 ? 0x1p-10 + 0x1p-22 : 0.0;
  unsigned bad = 0;
  for (unsigned z = 0; z < count; ++z)
    for (unsigned i = 0; i < m; ++i)
      for (unsigned j = 0; j < n; ++j) {
        const auto [ref, mag] = emulation::exact_dot(a.data() + std::size_t{z} * m * k, b.data(), i, j, k, n);
        const double bound32 = 2.0 * k * 0x1p-23 * mag + tf32 * mag;
        const double bound = bound32 + u * (std::fabs(ref) + bound32) + (u == 0x1p-11 ? 0x1p-25 : 0.0) + 1e-30;
        const double got = decode(C[offset + (std::size_t{z} * m + i) * n + j]);
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
  // element-wise fill); aligned: whole and partial blocks on the cp.async path with several K
  // steps, a K that ends inside a BK step (zero-filled chunks), 1-2 K steps (fewer than the
  // pipeline's stages: its prologue and empty groups), then an aligned shape at an odd offset.
  const Shape shapes[] = {{1, 1, 1, 0},      {17, 100, 17, 0},   {1, 17, 300, 0},  {130, 1, 17, 0},
                          {129, 33, 131, 0}, {256, 128, 128, 0}, {96, 40, 72, 0},  {130, 200, 136, 0},
                          {128, 16, 128, 0}, {64, 8, 64, 0},     {128, 96, 64, 1}, {200, 64, 24, 0}};
  // Stacks add only the batch offsets: a few shapes (both paths, partial blocks) suffice.
  const Shape stacked[] = {{17, 100, 17, 0}, {129, 33, 131, 0}, {96, 40, 72, 0}, {128, 96, 64, 1}};
  bool ok = true;
  for (const Shape& s : VGPU_MM_BATCH ? std::span<const Shape>(stacked) : std::span<const Shape>(shapes))
    ok = check(s.m, s.k, s.n, s.offset) && ok;
  return ok ? 0 : 1;
}
