// SPDX-License-Identifier: Apache-2.0
// fallback/cpu/kernels/kernels_amx.cpp — bfloat16 matmul on AMX tiles (Sapphire Rapids and
// later): C[m×n] = A[m×k]·B[k×n], bfloat16 in and out, float32 accumulation in the tiles, each
// result rounded once (to nearest even). Offered by the CPU op tuner only where the CPU has
// AMX-BF16 and the OS granted tile data (platform::enable_amx_tiles()); compiled with
// -mamx-tile -mamx-bf16 and AVX-512 (fallback/cpu/CMakeLists.txt), called only from the
// AVX-512 kernel set's table.
//
// Layout: A is copied into row blocks padded to 32 rows and K to a multiple of 32; B into
// 16-column panels in AMX's pair-interleaved ("VNNI") order, one 64-byte row per pair of K
// rows. Each task owns 32 rows of C and up to 256 columns: per 32×32 block of C, four
// accumulator tiles (0–3) take two A tiles (4, 5) times two B tiles (6, 7) per 32-deep K step.
//
// Everything but the exported function has internal linkage and uses no std:: template:
// nothing compiled with these flags may become the copy the linker keeps for other callers
// (kernels/simd.hpp says why).
// GCC 12's avx512fintrin.h warns of its own undefined pass-through operands (a false positive
// in the compiler's header, as in kernels_avx512.cpp): silenced for this file only.
#pragma GCC diagnostic push
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <new>

#include "cpu_parallel.hpp"
#include "kernels/matmul_amx.hpp"
#include "vgpu/kernels/kernel_abi.hpp"

namespace vgpu::cpu {
namespace {

constexpr std::size_t kBlock = 32;          // C rows and columns per micro-kernel: 2×2 tiles
constexpr std::size_t kStepK = 32;          // K per tile step: 16 pairs
constexpr std::size_t kColsPerTask = 256;   // C columns one task walks with its A rows in L2
constexpr std::size_t kPanelRowBytes = 64;  // one B tile row: 16 columns × a pair of K rows

// Returns ceil(a / b) · b.
constexpr std::size_t round_up(std::size_t a, std::size_t b) { return (a + b - 1) / b * b; }

// The tile configuration (palette 1): eight tiles of 16 rows × 64 bytes.
struct alignas(64) TileConfig {
  std::uint8_t palette_id;
  std::uint8_t start_row;
  std::uint8_t reserved[14];
  std::uint16_t colsb[16];
  std::uint8_t rows[16];
};

// Configures this thread's tiles; tile configuration is per thread, so every task sets it.
void configure_tiles() {
  TileConfig cfg{};
  cfg.palette_id = 1;
  for (int t = 0; t < 8; ++t) {
    cfg.colsb[t] = 64;
    cfg.rows[t] = 16;
  }
  _tile_loadconfig(&cfg);
}

// A 64-byte-aligned buffer freed with its owner (the kernel may throw while it lives).
struct Aligned {
  void* data = nullptr;
  explicit Aligned(std::size_t bytes) : data(::operator new (bytes, std::align_val_t{64})) {}
  Aligned(const Aligned&) = delete;
  Aligned& operator=(const Aligned&) = delete;
  ~Aligned() { ::operator delete (data, std::align_val_t{64}); }
};

// What every task of one workgroup's block of C reads. a, b and c point at the product's
// matrices (row-major m×k, k×n, m×n); the block is rows [row0, row0 + rows) and columns
// [col0, col0 + cols) of C.
struct Problem {
  const std::uint16_t* a;
  const std::uint16_t* b;
  std::uint16_t* c;
  std::size_t m, n, k;
  std::size_t row0, rows, col0, cols;
  std::size_t kp;         // K padded to kStepK
  std::uint16_t* a_pack;  // round_up(rows, 32) rows of kp
  std::uint16_t* b_pack;  // round_up(cols, 32) / 16 panels of kp / 2 rows of 64 bytes
  std::size_t col_tasks;  // tasks along the block's columns
  const CpuWorkgroup* wg;
};

// Copies 32 rows of the block's A (row block `block`) into the padded buffer, zeros past the
// block's rows and K.
void pack_a_rows(void* ctx, std::size_t block) {
  const Problem& p = *static_cast<const Problem*>(ctx);
  for (std::size_t r = block * kBlock; r < (block + 1) * kBlock; ++r) {
    std::uint16_t* dst = p.a_pack + r * p.kp;
    std::size_t col = 0;
    if (r < p.rows)
      for (const std::uint16_t* src = p.a + (p.row0 + r) * p.k; col < p.k; ++col) dst[col] = src[col];
    for (; col < p.kp; ++col) dst[col] = 0;
  }
}

// Packs 16 of the block's columns of B (panel q) in pair-interleaved order, zeros past the
// block's columns and K.
void pack_b_panel(void* ctx, std::size_t q) {
  const Problem& p = *static_cast<const Problem*>(ctx);
  std::uint16_t* dst = p.b_pack + q * (p.kp / 2) * (kPanelRowBytes / 2);
  for (std::size_t pair = 0; pair < p.kp / 2; ++pair)
    for (std::size_t c = 0; c < 16; ++c) {
      const std::size_t j = q * 16 + c, k0 = 2 * pair, k1 = k0 + 1;
      const bool in = j < p.cols;
      *dst++ = in && k0 < p.k ? p.b[k0 * p.n + p.col0 + j] : 0;
      *dst++ = in && k1 < p.k ? p.b[k1 * p.n + p.col0 + j] : 0;
    }
}

// Rounds 16 floats to bfloat16 (to nearest even; NaN stays a quiet NaN), as float_to_bf16_bits.
__m256i round_to_bf16(__m512 v) {
  const __m512i x = _mm512_castps_si512(v);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(x, 16), _mm512_set1_epi32(1));
  const __m512i rounded = _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(x, _mm512_set1_epi32(0x7fff)), lsb), 16);
  const __mmask16 nan =
      _mm512_cmpgt_epu32_mask(_mm512_and_si512(x, _mm512_set1_epi32(0x7fffffff)), _mm512_set1_epi32(0x7f800000));
  const __m512i quiet = _mm512_or_si512(_mm512_srli_epi32(x, 16), _mm512_set1_epi32(0x40));
  return _mm512_cvtepi32_epi16(_mm512_mask_blend_epi32(nan, rounded, quiet));
}

// Computes the 32×32 block at (i, j) of the workgroup's block over all of K, then rounds it
// into C.
void block(const Problem& p, std::size_t i, std::size_t j) {
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  const std::size_t a_stride = p.kp * sizeof(std::uint16_t);
  const std::uint16_t* a0 = p.a_pack + i * p.kp;
  const std::uint16_t* a1 = a0 + 16 * p.kp;
  const std::size_t panel_halfs = (p.kp / 2) * (kPanelRowBytes / 2);
  const std::uint16_t* b0 = p.b_pack + (j / 16) * panel_halfs;
  const std::uint16_t* b1 = b0 + panel_halfs;
  for (std::size_t kk = 0; kk < p.kp; kk += kStepK) {
    _tile_loadd(4, a0 + kk, a_stride);
    _tile_loadd(5, a1 + kk, a_stride);
    _tile_loadd(6, b0 + kk / 2 * (kPanelRowBytes / 2), kPanelRowBytes);
    _tile_loadd(7, b1 + kk / 2 * (kPanelRowBytes / 2), kPanelRowBytes);
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  alignas(64) float out[kBlock * kBlock];
  constexpr std::size_t row_bytes = kBlock * sizeof(float);
  _tile_stored(0, out, row_bytes);
  _tile_stored(1, out + 16, row_bytes);
  _tile_stored(2, out + 16 * kBlock, row_bytes);
  _tile_stored(3, out + 16 * kBlock + 16, row_bytes);
  const std::size_t rows = p.rows - i < kBlock ? p.rows - i : kBlock;
  const std::size_t cols = p.cols - j < kBlock ? p.cols - j : kBlock;
  for (std::size_t r = 0; r < rows; ++r) {
    std::uint16_t* dst = p.c + (p.row0 + i + r) * p.n + p.col0 + j;
    for (std::size_t h = 0; h < 2 && h * 16 < cols; ++h) {
      const std::size_t left = cols - h * 16;
      const __mmask16 keep = left >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << left) - 1);
      _mm256_mask_storeu_epi16(dst + h * 16, keep, round_to_bf16(_mm512_load_ps(out + r * kBlock + h * 16)));
    }
  }
}

// One task: 32 rows of the block (row block t / col_tasks) by up to kColsPerTask columns.
void task(void* ctx, std::size_t t) {
  const Problem& p = *static_cast<const Problem*>(ctx);
  if (p.wg->expired()) return;  // the call raises timeout; no more work
  const std::size_t i = t / p.col_tasks * kBlock, j0 = t % p.col_tasks * kColsPerTask;
  const std::size_t j_end = j0 + kColsPerTask < p.cols ? j0 + kColsPerTask : p.cols;
  configure_tiles();
  for (std::size_t j = j0; j < j_end; j += kBlock) block(p, i, j);
  _tile_release();
}

// Returns ceil(a / b) for b > 0.
constexpr std::size_t div_up(std::size_t a, std::size_t b) { return (a + b - 1) / b; }

// Computes this workgroup's block of the product of a (m×k) and b (k×n) into c: the grid
// splits C's rows evenly over num_workgroups[1] and its columns over [0], in whole 32×32
// blocks, as the float32 kernels do (the tuner launches one group for the whole product).
void run_product(const CpuWorkgroup& wg, const std::uint16_t* a, const std::uint16_t* b, std::uint16_t* c,
                 std::size_t m, std::size_t n, std::size_t k) {
  const std::size_t gx = wg.num_workgroups[0] ? wg.num_workgroups[0] : 1;
  const std::size_t gy = wg.num_workgroups[1] ? wg.num_workgroups[1] : 1;
  const std::size_t block_rows = round_up(div_up(m, gy), kBlock), block_cols = round_up(div_up(n, gx), kBlock);
  Problem p{};
  p.a = a;
  p.b = b;
  p.c = c;
  p.m = m;
  p.n = n;
  p.k = k;
  p.row0 = wg.workgroup_id[1] * block_rows;
  p.col0 = wg.workgroup_id[0] * block_cols;
  if (p.row0 >= m || p.col0 >= n) return;  // a grid larger than the matrix: nothing to do
  p.rows = m - p.row0 < block_rows ? m - p.row0 : block_rows;
  p.cols = n - p.col0 < block_cols ? n - p.col0 : block_cols;
  p.wg = &wg;
  if (k == 0) {  // an empty sum: zeros
    for (std::size_t r = 0; r < p.rows; ++r)
      for (std::size_t j = 0; j < p.cols; ++j) c[(p.row0 + r) * n + p.col0 + j] = 0;
    return;
  }
  p.kp = round_up(k, kStepK);
  const std::size_t row_blocks = div_up(p.rows, kBlock), panels = round_up(p.cols, kBlock) / 16;
  Aligned a_pack(row_blocks * kBlock * p.kp * sizeof(std::uint16_t));
  Aligned b_pack(panels * (p.kp / 2) * kPanelRowBytes);
  p.a_pack = static_cast<std::uint16_t*>(a_pack.data);
  p.b_pack = static_cast<std::uint16_t*>(b_pack.data);
  p.col_tasks = div_up(p.cols, kColsPerTask);
  parallel_for(row_blocks, &pack_a_rows, &p);
  parallel_for(panels, &pack_b_panel, &p);
  parallel_for(row_blocks * p.col_tasks, &task, &p);
}

}  // namespace

void amx_bf16_matmul(const CpuWorkgroup& wg) {
  // Plain member access, not CpuWorkgroup's templates: their copies compiled here could be the
  // ones other kernel sets link to.
  const auto& q = *static_cast<const vgpu::kernels::MatmulParams*>(wg.params);
  run_product(wg, static_cast<const std::uint16_t*>(wg.buffers[0].data),
              static_cast<const std::uint16_t*>(wg.buffers[1].data), static_cast<std::uint16_t*>(wg.buffers[2].data),
              q.m, q.n, q.k);
}

void amx_bf16_matmul_batched(const CpuWorkgroup& wg) {
  const auto& q = *static_cast<const vgpu::kernels::MatmulBatchParams*>(wg.params);
  const std::size_t i = std::size_t{q.first} + wg.workgroup_id[2];
  const std::size_t ia = q.a_base + (i / q.inner) * q.a_outer + (i % q.inner) * q.a_inner;
  const std::size_t ib = q.b_base + (i / q.inner) * q.b_outer + (i % q.inner) * q.b_inner;
  const std::size_t m = q.m, n = q.n, k = q.k;
  run_product(wg, static_cast<const std::uint16_t*>(wg.buffers[0].data) + ia * m * k,
              static_cast<const std::uint16_t*>(wg.buffers[1].data) + ib * k * n,
              static_cast<std::uint16_t*>(wg.buffers[2].data) + (q.c_base + i) * m * n, m, n, k);
}

}  // namespace vgpu::cpu

#pragma GCC diagnostic pop
