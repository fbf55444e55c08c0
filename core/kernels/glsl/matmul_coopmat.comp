// SPDX-License-Identifier: Apache-2.0
// C[m×n] = A[m×k]·B[k×n] on float16 arrays (row-major, any m, n, k) with the matrix engines of
// Vulkan's VK_NV_cooperative_matrix: 16×16×16 float16 products accumulated in float32, C rounded
// to float16 once. Vulkan only: core/kernels/src/coopmat_tuning.cpp offers it where the device
// advertises the feature "cooperative_matrix", and the runtime runs it only where that
// feature's truth test passed (OpTuning::feature).
//
// One workgroup of (BM/WM)·(BN/WN) subgroups of 32 invocations computes a BM×BN tile of C;
// subgroup s owns the WM×WN block (s / (BN/WN), s % (BN/WN)) of it as (WM/16)·(WN/16)
// float32 accumulator matrices. K is walked BK at a time through double-buffered shared tiles
// (rows padded by 8 halves, so fragment rows start 16 bytes apart on different banks): the next
// step's global loads sit in registers while the current step is multiplied, one barrier per step.
// Every loop over fragments is unrolled ([[unroll]]): an array of cooperative matrices indexed
// at run time would live in local memory.
// Global loads are 16-byte uvec4s (8 halves) when every row of A and B starts on a 16-byte
// boundary (k % 8 == 0, n % 8 == 0) and the tile lies inside; otherwise element by element with
// zeros past the edges. C: whole tiles with n % 8 == 0 are stored by the cooperative-matrix
// store itself; the others go through a per-subgroup 16×16 float32 staging tile and are written
// element by element inside C (16-bit stores: never a word shared with another workgroup's
// element).
//
// VGPU_MM_BATCH=1: the params are kernel_abi.hpp's MatmulBatchParams and workgroup z computes
// one product of a stack of matrices (as matmul.comp).
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_control_flow_attributes : require

#if defined(VGPU_MM_BATCH) && VGPU_MM_BATCH
VGPU_PARAMS {
  uint m; uint n; uint k; uint pad;
  uint first; uint inner; uint a_outer; uint a_inner;
  uint b_outer; uint b_inner; uint a_base; uint b_base;
  uint c_base; uint pad1; uint pad2; uint pad3;
} p;
#else
VGPU_PARAMS { uint m; uint n; uint k; uint pad; } p;
#endif

#ifndef VGPU_CM_BM
#define VGPU_CM_BM 128
#endif
#ifndef VGPU_CM_BN
#define VGPU_CM_BN 128
#endif
#ifndef VGPU_CM_BK
#define VGPU_CM_BK 32
#endif
#ifndef VGPU_CM_WM
#define VGPU_CM_WM 64
#endif
#ifndef VGPU_CM_WN
#define VGPU_CM_WN 32
#endif
#define BM VGPU_CM_BM
#define BN VGPU_CM_BN
#define BK VGPU_CM_BK
#define WM VGPU_CM_WM
#define WN VGPU_CM_WN
#define FM (WM / 16)  // accumulator matrices per subgroup, down
#define FN (WN / 16)  // and across
#define SUBGROUPS ((BM / WM) * (BN / WN))
#define THREADS (SUBGROUPS * 32)
#define AS_STRIDE (BK + 8)  // halves per shared A row
#define BS_STRIDE (BN + 8)  // halves per shared B row
#define A_VEC (BM * BK / 8)  // uvec4s per A tile
#define B_VEC (BK * BN / 8)
#define A_LOADS ((A_VEC + THREADS - 1) / THREADS)
#define B_LOADS ((B_VEC + THREADS - 1) / THREADS)
#if (BM % WM) != 0 || (BN % WN) != 0 || (WM % 16) != 0 || (WN % 16) != 0 || (BK % 16) != 0
#error "matmul_coopmat.comp: the subgroup block must split the tile, in multiples of 16, and BK must be a multiple of 16"
#endif

// uvec4 views of A and B (8 halves each); C as halves. vgpu's reflection takes one declaration per binding.
layout(std430, binding = 0) readonly buffer BufA { uvec4 A8[]; };
layout(std430, binding = 1) readonly buffer BufB { uvec4 B8[]; };
layout(std430, binding = 2) writeonly buffer BufC { float16_t C[]; };

shared float16_t As[2 * BM * AS_STRIDE];  // [buf][row][kk]
shared float16_t Bs[2 * BK * BS_STRIDE];  // [buf][kk][col]
shared float Cs[SUBGROUPS * 256];         // one 16×16 staging tile per subgroup (edge tiles only)

uvec4 ra[A_LOADS], rb[B_LOADS];  // the next step's tiles, in flight while the current one is multiplied

uint abase, bbase, cbase;
void locate() {
#if defined(VGPU_MM_BATCH) && VGPU_MM_BATCH
  const uint i = p.first + gl_WorkGroupID.z;
  abase = (p.a_base + (i / p.inner) * p.a_outer + (i % p.inner) * p.a_inner) * (p.m * p.k);
  bbase = (p.b_base + (i / p.inner) * p.b_outer + (i % p.inner) * p.b_inner) * (p.k * p.n);
  cbase = (p.c_base + i) * (p.m * p.n);
#else
  abase = 0u;
  bbase = 0u;
  cbase = 0u;
#endif
}

// Element i of a uvec4 view of halves, as its 16 bits.
uint half_bits(uvec4 v, uint i) {
  const uint w = v[(i >> 1) & 3u];
  return (i & 1u) != 0u ? w >> 16 : w & 0xFFFFu;
}
uint a_bits(uint r, uint c) {
  const uint i = abase + r * p.k + c;
  return (r < p.m && c < p.k) ? half_bits(A8[i >> 3], i) : 0u;
}
uint b_bits(uint r, uint c) {
  const uint i = bbase + r * p.n + c;
  return (r < p.k && c < p.n) ? half_bits(B8[i >> 3], i) : 0u;
}
// Eight halves from one row starting at (r, c), zero past the edges.
uvec4 gather_a(uint r, uint c) {
  uvec4 v;
  [[unroll]] for (uint j = 0u; j < 4u; ++j) v[j] = a_bits(r, c + 2u * j) | (a_bits(r, c + 2u * j + 1u) << 16);
  return v;
}
uvec4 gather_b(uint r, uint c) {
  uvec4 v;
  [[unroll]] for (uint j = 0u; j < 4u; ++j) v[j] = b_bits(r, c + 2u * j) | (b_bits(r, c + 2u * j + 1u) << 16);
  return v;
}

// Loads step k0's A and B tiles into ra, rb (vec: rows 16-byte aligned and the tile inside).
void load_tiles(bool vec, uint row0, uint col0, uint k0, uint tid) {
  [[unroll]] for (uint l = 0u; l < A_LOADS; ++l) {
    const uint idx = tid + l * THREADS;
    if ((A_VEC % THREADS) != 0 && idx >= A_VEC) break;
    const uint r = row0 + idx / (BK / 8), c = k0 + (idx % (BK / 8)) * 8u;
    ra[l] = vec ? A8[(abase + r * p.k + c) >> 3] : gather_a(r, c);
  }
  [[unroll]] for (uint l = 0u; l < B_LOADS; ++l) {
    const uint idx = tid + l * THREADS;
    if ((B_VEC % THREADS) != 0 && idx >= B_VEC) break;
    const uint r = k0 + idx / (BN / 8), c = col0 + (idx % (BN / 8)) * 8u;
    rb[l] = vec ? B8[(bbase + r * p.n + c) >> 3] : gather_b(r, c);
  }
}

// Writes eight halves v into shared array S from element o on.
#define PUT8(S, o, v)                                 \
  {                                                   \
    [[unroll]] for (uint j = 0u; j < 4u; ++j) {       \
      const f16vec2 h = unpackFloat2x16(v[j]);        \
      S[(o) + 2u * j] = h.x;                          \
      S[(o) + 2u * j + 1u] = h.y;                     \
    }                                                 \
  }

// Stores ra, rb into shared buffer buf.
void store_tiles(uint buf, uint tid) {
  [[unroll]] for (uint l = 0u; l < A_LOADS; ++l) {
    const uint idx = tid + l * THREADS;
    if ((A_VEC % THREADS) != 0 && idx >= A_VEC) break;
    const uint o = (buf * BM + idx / (BK / 8)) * AS_STRIDE + (idx % (BK / 8)) * 8u;
    PUT8(As, o, ra[l]);
  }
  [[unroll]] for (uint l = 0u; l < B_LOADS; ++l) {
    const uint idx = tid + l * THREADS;
    if ((B_VEC % THREADS) != 0 && idx >= B_VEC) break;
    const uint o = (buf * BK + idx / (BN / 8)) * BS_STRIDE + (idx % (BN / 8)) * 8u;
    PUT8(Bs, o, rb[l]);
  }
}

void main() {
  const uint tid = gl_LocalInvocationID.x;
  // The layout assumes 32-invocation subgroups (the tuner offers it only there); derived from
  // the invocation index, not gl_SubgroupID, so that every subgroup's block is a constant.
  const uint sg = tid / 32u, lane = tid % 32u;
  const uint wr = (sg / (BN / WN)) * WM, wc = (sg % (BN / WN)) * WN;  // the subgroup's block in the tile
  const uint row0 = gl_WorkGroupID.y * BM, col0 = gl_WorkGroupID.x * BN;
  locate();
  const bool inside = row0 + BM <= p.m && col0 + BN <= p.n;
  const bool aligned = p.k % 8u == 0u && p.n % 8u == 0u;

  fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> acc[FM][FN];
  [[unroll]] for (int i = 0; i < FM; ++i)
    [[unroll]] for (int j = 0; j < FN; ++j) acc[i][j] = fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>(0.0);

  const uint steps = (p.k + BK - 1u) / BK;
  // A step is loaded with vectors when its whole K range lies inside too.
  load_tiles(aligned && inside && BK <= p.k, row0, col0, 0u, tid);
  store_tiles(0u, tid);
  barrier();
  for (uint s = 0u; s < steps; ++s) {
    const uint cur = s & 1u;
    const bool more = s + 1u < steps;
    if (more) load_tiles(aligned && inside && (s + 2u) * BK <= p.k, row0, col0, (s + 1u) * BK, tid);
    [[unroll]] for (uint kk = 0u; kk < BK; kk += 16u) {
      fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> a[FM];
      fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> b[FN];
      [[unroll]] for (int i = 0; i < FM; ++i)
        coopMatLoadNV(a[i], As, (cur * BM + wr + uint(i) * 16u) * AS_STRIDE + kk, AS_STRIDE, false);
      [[unroll]] for (int j = 0; j < FN; ++j)
        coopMatLoadNV(b[j], Bs, (cur * BK + kk) * BS_STRIDE + wc + uint(j) * 16u, BS_STRIDE, false);
      [[unroll]] for (int i = 0; i < FM; ++i)
        [[unroll]] for (int j = 0; j < FN; ++j) acc[i][j] = coopMatMulAddNV(a[i], b[j], acc[i][j]);
    }
    // The other buffer was last read before the previous barrier, so it is free to fill.
    if (more) store_tiles(cur ^ 1u, tid);
    barrier();
  }

  if (inside && p.n % 8u == 0u) {
    [[unroll]] for (int i = 0; i < FM; ++i)
      [[unroll]] for (int j = 0; j < FN; ++j) {
        const fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> h = fcoopmatNV<16, gl_ScopeSubgroup, 16, 16>(acc[i][j]);
        coopMatStoreNV(h, C, cbase + (row0 + wr + uint(i) * 16u) * p.n + col0 + wc + uint(j) * 16u, p.n, false);
      }
    return;
  }
  // Edge tile: each accumulator through the subgroup's staging tile, then element by element.
  [[unroll]] for (int i = 0; i < FM; ++i)
    [[unroll]] for (int j = 0; j < FN; ++j) {
      coopMatStoreNV(acc[i][j], Cs, sg * 256u, 16u, false);
      subgroupMemoryBarrierShared();
      subgroupBarrier();
      const uint r0 = row0 + wr + uint(i) * 16u, c0 = col0 + wc + uint(j) * 16u;
      for (uint e = lane; e < 256u; e += 32u) {
        const uint r = r0 + e / 16u, c = c0 + e % 16u;
        if (r < p.m && c < p.n) C[cbase + r * p.n + c] = float16_t(Cs[sg * 256u + e]);
      }
      subgroupMemoryBarrierShared();  // the tile is read before the next accumulator overwrites it
      subgroupBarrier();
    }
}
