// fallback/cpu/kernels/matmul.hpp — the built-in "matmul" kernel: a blocked, packed GEMM
// (GotoBLAS/BLIS structure) with an xsimd register-blocked micro-kernel, templated on the
// architecture. One workgroup computes one kCpuMatmulTileM × kCpuMatmulTileN tile of C.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "core/kernels/kernel_abi.hpp"
#include "fallback/cpu/kernels/simd.hpp"

namespace vgpu::cpu::builtin {

/// Register and cache blocking for one architecture. MR×NR accumulators must fit in the
/// vector register file with room for the NR/W B vectors and one broadcast A value:
/// SSE2 6×8 and AVX2 6×16 use 12 of 16 registers; AVX-512 12×32 uses 24 of 32.
template <class Arch>
struct MatmulBlocking {
  static constexpr std::size_t W = Simd<Arch>::W;
  static constexpr std::size_t MR = W >= 16 ? 12 : 6;  ///< rows of C per micro-kernel
  static constexpr std::size_t NV = 2;                 ///< vectors of C per micro-kernel row
  static constexpr std::size_t NR = NV * W;            ///< columns of C per micro-kernel
  /// K depth per packed block: a KC×NR micro-panel of B (≤ 32 KiB) stays in L1 while the
  /// KC×MR micro-panels of A stream through from L2.
  static constexpr std::size_t KC = 256;
};

/// C[m×n] = A[m×k]·B[k×n], row-major float32; slots 0 = A, 1 = B, 2 = C.
template <class Arch>
struct Matmul {
  using S = Simd<Arch>;
  using V = typename S::V;
  using Blk = MatmulBlocking<Arch>;
  static constexpr std::size_t W = S::W, MR = Blk::MR, NV = Blk::NV, NR = Blk::NR, KC = Blk::KC;
  static constexpr std::size_t TM = vgpu::kernels::kCpuMatmulTileM, TN = vgpu::kernels::kCpuMatmulTileN;
  static constexpr std::size_t MPANELS = (TM + MR - 1) / MR, NPANELS = (TN + NR - 1) / NR;
  static constexpr std::size_t A_FLOATS = MPANELS * MR * KC, B_FLOATS = NPANELS * NR * KC;

  /// Computes one tile of C: workgroup_id[0] is the column tile, workgroup_id[1] the row tile.
  static void run(const CpuWorkgroup& wg) {
    const auto& p = wg.params_as<vgpu::kernels::MatmulParams>();
    const std::uint64_t m = p.m, n = p.n, k = p.k;
    const std::uint64_t row0 = std::uint64_t{wg.workgroup_id[1]} * TM;
    const std::uint64_t col0 = std::uint64_t{wg.workgroup_id[0]} * TN;
    if (row0 >= m || col0 >= n) return;  // a grid larger than the matrix: nothing to do
    const std::size_t rows = S::min(TM, m - row0), cols = S::min(TN, n - col0);
    const float* a = wg.buffer<const float>(0);
    const float* b = wg.buffer<const float>(1);
    float* c = wg.buffer<float>(2) + row0 * n + col0;

    if (k == 0) {  // an empty sum: C is zero, and there is nothing to pack
      for (std::size_t r = 0; r < rows; ++r) std::memset(c + r * n, 0, cols * sizeof(float));
      return;
    }

    float* const apack = Scratch<Arch, Matmul>::get(A_FLOATS + B_FLOATS);
    float* const bpack = apack + A_FLOATS;
    const std::size_t mpanels = S::div_up(rows, MR), npanels = S::div_up(cols, NR);

    for (std::uint64_t pc = 0; pc < k; pc += KC) {
      const std::size_t kc = S::min(KC, k - pc);
      pack_a(a + row0 * k + pc, k, rows, kc, apack);
      pack_b(b + pc * n + col0, n, cols, kc, bpack);
      const bool accumulate = pc != 0;  // the first K block overwrites C, later ones add
      for (std::size_t jp = 0; jp < npanels; ++jp) {
        const float* bp = bpack + jp * NR * kc;
        const std::size_t nr = S::min(NR, cols - jp * NR);
        for (std::size_t ip = 0; ip < mpanels; ++ip) {
          const float* ap = apack + ip * MR * kc;
          const std::size_t mr = S::min(MR, rows - ip * MR);
          float* cp = c + ip * MR * n + jp * NR;
          if (mr == MR && nr == NR)
            micro(kc, ap, bp, cp, n, accumulate);
          else
            micro_edge(kc, ap, bp, cp, n, accumulate, mr, nr);
        }
      }
    }
  }

  /// Packs rows×kc of A (leading dimension lda) into MR-row panels, p-major within a panel
  /// ([p*MR + r]), zero-padding the rows past `rows` so the micro-kernel never branches.
  static void pack_a(const float* a, std::size_t lda, std::size_t rows, std::size_t kc, float* out) {
    const std::size_t panels = S::div_up(rows, MR);
    for (std::size_t ip = 0; ip < panels; ++ip) {
      float* dst = out + ip * MR * kc;
      const std::size_t mr = S::min(MR, rows - ip * MR);
      const float* src = a + ip * MR * lda;
      if (mr == MR) {
        pack_a_full(src, lda, kc, dst);
      } else {
        for (std::size_t p = 0; p < kc; ++p) {
          for (std::size_t r = 0; r < mr; ++r) dst[p * MR + r] = src[r * lda + p];
          for (std::size_t r = mr; r < MR; ++r) dst[p * MR + r] = 0.0f;
        }
      }
    }
  }

  /// Packs one full MR-row panel. Reads W columns of every row as vectors and scatters
  /// them lane by lane, so each row is read once, sequentially.
  static void pack_a_full(const float* src, std::size_t lda, std::size_t kc, float* dst) {
    std::size_t p = 0;
    for (; p + W <= kc; p += W) {
      for (std::size_t r = 0; r < MR; ++r) {
        alignas(64) float lanes[W];
        V::load_unaligned(src + r * lda + p).store_aligned(lanes);
#pragma GCC unroll 16
        for (std::size_t l = 0; l < W; ++l) dst[(p + l) * MR + r] = lanes[l];
      }
    }
    for (; p < kc; ++p)
      for (std::size_t r = 0; r < MR; ++r) dst[p * MR + r] = src[r * lda + p];
  }

  /// Packs kc×cols of B (leading dimension ldb) into NR-column panels, p-major within a panel
  /// ([p*NR + c]), zero-padding columns past `cols`.
  static void pack_b(const float* b, std::size_t ldb, std::size_t cols, std::size_t kc, float* out) {
    const std::size_t panels = S::div_up(cols, NR);
    const std::size_t full = cols / NR;
    for (std::size_t p = 0; p < kc; ++p) {
      const float* src = b + p * ldb;
      for (std::size_t jp = 0; jp < full; ++jp) {
        float* dst = out + jp * NR * kc + p * NR;
#pragma GCC unroll 4
        for (std::size_t v = 0; v < NV; ++v) V::load_unaligned(src + jp * NR + v * W).store_aligned(dst + v * W);
      }
      if (full < panels) {
        float* dst = out + full * NR * kc + p * NR;
        const std::size_t nr = cols - full * NR;
        for (std::size_t j = 0; j < nr; ++j) dst[j] = src[full * NR + j];
        for (std::size_t j = nr; j < NR; ++j) dst[j] = 0.0f;
      }
    }
  }

  /// Accumulates an MR×NR block: acc = Σ_p a[p,:]ᵀ·b[p,:] with one broadcast and NV FMAs
  /// per row per p; the accumulators live in registers for the whole K block.
  static void block(std::size_t kc, const float* __restrict a, const float* __restrict b, V (&acc)[MR][NV]) {
#pragma GCC unroll 16
    for (std::size_t r = 0; r < MR; ++r)
#pragma GCC unroll 4
      for (std::size_t v = 0; v < NV; ++v) acc[r][v] = V(0.0f);
    for (std::size_t p = 0; p < kc; ++p) {
      V bv[NV];
#pragma GCC unroll 4
      for (std::size_t v = 0; v < NV; ++v) bv[v] = V::load_aligned(b + p * NR + v * W);
#pragma GCC unroll 16
      for (std::size_t r = 0; r < MR; ++r) {
        const V ar(a[p * MR + r]);
#pragma GCC unroll 4
        for (std::size_t v = 0; v < NV; ++v) acc[r][v] = S::fmadd(ar, bv[v], acc[r][v]);
      }
    }
  }

  /// Full MR×NR block written straight into C (overwrite or accumulate).
  static void micro(std::size_t kc, const float* a, const float* b, float* c, std::size_t ldc, bool accumulate) {
    V acc[MR][NV];
    block(kc, a, b, acc);
    if (accumulate) {
#pragma GCC unroll 16
      for (std::size_t r = 0; r < MR; ++r)
#pragma GCC unroll 4
        for (std::size_t v = 0; v < NV; ++v)
          (acc[r][v] + V::load_unaligned(c + r * ldc + v * W)).store_unaligned(c + r * ldc + v * W);
    } else {
#pragma GCC unroll 16
      for (std::size_t r = 0; r < MR; ++r)
#pragma GCC unroll 4
        for (std::size_t v = 0; v < NV; ++v) acc[r][v].store_unaligned(c + r * ldc + v * W);
    }
  }

  /// Edge block (mr < MR or nr < NR): computes the full padded block into a local buffer and
  /// writes back only the valid mr×nr part, so C is never touched out of bounds.
  static void micro_edge(std::size_t kc, const float* a, const float* b, float* c, std::size_t ldc,
                         bool accumulate, std::size_t mr, std::size_t nr) {
    V acc[MR][NV];
    block(kc, a, b, acc);
    alignas(64) float tmp[MR * NR];
    for (std::size_t r = 0; r < MR; ++r)
      for (std::size_t v = 0; v < NV; ++v) acc[r][v].store_aligned(tmp + r * NR + v * W);
    for (std::size_t r = 0; r < mr; ++r)
      for (std::size_t j = 0; j < nr; ++j) c[r * ldc + j] = accumulate ? c[r * ldc + j] + tmp[r * NR + j] : tmp[r * NR + j];
  }
};

}  // namespace vgpu::cpu::builtin
