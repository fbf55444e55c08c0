// SPDX-License-Identifier: Apache-2.0
// C[m×n] = A[m×k]·B[k×n], row-major float32, any m, n, k. The GLSL twin of
// core/kernels/cuda/matmul.cu (same tiling scheme, same defines); the OpTuner
// (core/kernels/src/gpu_tuning.cpp) picks one variant per shape and device.
//
// Tiled (default): one workgroup of (BN/TN)×(BM/TM) invocations computes a BM×BN tile of C;
// invocation (tx, ty) keeps TM×TN accumulators and owns rows g·4·TY + ty·4 + i and columns
// h·4·TX + tx·4 + j (g < TM/4, h < TN/4, i, j < 4), so its shared-memory reads are vec4s that
// neighbouring invocations take from consecutive addresses, and its C stores are vec4s. K is
// walked BK at a time through double-buffered shared memory: the next step's global loads sit
// in registers while the current step is multiplied, so one barrier per step suffices. A is
// stored transposed (K-major), rows padded by 4 floats.
// Workgroups wholly inside C with k % BK == 0 and n % 4 == 0 take the fast path (vec4 global
// loads and stores, no checks); the others load and store element by element with bounds
// checks. The branch is uniform per workgroup.
//
// Split-K (both variants): p.pad, when not 0, is a K slice length (a multiple of 16, so of
// every BK); workgroup z then sums k in [z·pad, min(k, (z+1)·pad)) and writes its partial C at
// C[z·m·n ...]; a second step (matmul_splitk_reduce.comp) adds the slices. pad = 0: all of K.
// Besides spreading a long K over the device, slices keep each invocation's loops under a
// driver's loop limit (DeviceLimits::max_loop_iterations: Mesa's gallivm stops an invocation's
// loops after 65 535 iterations); the tuner counts this file's loops (GlslMatmulTiling::
// max_k_slice), so keep it in step with them.
//
// VGPU_MM_NAIVE=1: one invocation per element of C and one loop over k, no shared memory — for
// shapes where a tile would be mostly padding (a 16×16 product in a 64×64 tile) or the grid
// would leave most of the device idle. The workgroup is 16×16.
//
// VGPU_MM_BATCH=1 (either variant): the params are kernel_abi.hpp's MatmulBatchParams and
// workgroup z computes one product of a stack of matrices (no split-K: z is the product).
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

// Element offsets of this workgroup's A, B and C (C: its slice's partial product under
// split-K), and the K range it sums.
uint abase, bbase, cbase, kbegin, kend;
void locate() {
#if defined(VGPU_MM_BATCH) && VGPU_MM_BATCH
  const uint i = p.first + gl_WorkGroupID.z;
  abase = (p.a_base + (i / p.inner) * p.a_outer + (i % p.inner) * p.a_inner) * (p.m * p.k);
  bbase = (p.b_base + (i / p.inner) * p.b_outer + (i % p.inner) * p.b_inner) * (p.k * p.n);
  cbase = (p.c_base + i) * (p.m * p.n);
  kbegin = 0u;
  kend = p.k;
#else
  const uint slice = p.pad == 0u ? p.k : p.pad;
  abase = 0u;
  bbase = 0u;
  cbase = gl_WorkGroupID.z * p.m * p.n;
  kbegin = gl_WorkGroupID.z * slice;
  kend = min(p.k, kbegin + slice);
#endif
}

#if defined(VGPU_MM_NAIVE) && VGPU_MM_NAIVE

layout(std430, binding = 0) readonly buffer BufA { float A[]; };
layout(std430, binding = 1) readonly buffer BufB { float B[]; };
layout(std430, binding = 2) writeonly buffer BufC { float C[]; };

void main() {
  const uint c = gl_GlobalInvocationID.x, r = gl_GlobalInvocationID.y;
  if (r >= p.m || c >= p.n) return;
  locate();
  float s = 0.0;
  uint a = abase + r * p.k + kbegin, b = bbase + kbegin * p.n + c;
  for (uint q = kbegin; q < kend; ++q, ++a, b += p.n) s = fma(A[a], B[b], s);
  C[cbase + r * p.n + c] = s;
}

#else

// vec4 views only: vgpu's reflection takes one declaration per binding, so the edge path
// addresses single floats as A4[i >> 2][i & 3] (a scalar access, never past the data).
layout(std430, binding = 0) readonly buffer BufA { vec4 A4[]; };
layout(std430, binding = 1) readonly buffer BufB { vec4 B4[]; };
layout(std430, binding = 2) writeonly buffer BufC { vec4 C4[]; };

#ifndef VGPU_MM_BM
#define VGPU_MM_BM 64
#endif
#ifndef VGPU_MM_BN
#define VGPU_MM_BN 64
#endif
#ifndef VGPU_MM_BK
#define VGPU_MM_BK 16
#endif
#ifndef VGPU_MM_TM
#define VGPU_MM_TM 4
#endif
#ifndef VGPU_MM_TN
#define VGPU_MM_TN 4
#endif
#define BM VGPU_MM_BM
#define BN VGPU_MM_BN
#define BK VGPU_MM_BK
#define TM VGPU_MM_TM
#define TN VGPU_MM_TN
#define TX (BN / TN)
#define TY (BM / TM)
#define THREADS (TX * TY)
#define A_VEC (BM * BK / 4)  // vec4s per tile
#define B_VEC (BK * BN / 4)
#define A_LOADS ((A_VEC + THREADS - 1) / THREADS)
#define B_LOADS ((B_VEC + THREADS - 1) / THREADS)
#define AS_STRIDE (BM + 4)
#if (TM % 4) != 0 || (TN % 4) != 0 || (BK % 4) != 0 || (BM % TM) != 0 || (BN % TN) != 0
#error "matmul.comp: TM, TN and BK must be multiples of 4 and the tile must split evenly over the invocations"
#endif

shared float As[2 * BK * AS_STRIDE];  // [buf][kk][row], A transposed
shared vec4 Bs[2 * BK * (BN / 4)];    // [buf][kk][col / 4]

vec4 ra[A_LOADS], rb[B_LOADS];  // the next step's tiles, in flight while the current one is multiplied

float at_or_zero_a(uint r, uint c) {
  const uint i = abase + r * p.k + c;
  return (r < p.m && c < p.k) ? A4[i >> 2][i & 3u] : 0.0;
}
float at_or_zero_b(uint r, uint c) {
  const uint i = bbase + r * p.n + c;
  return (r < p.k && c < p.n) ? B4[i >> 2][i & 3u] : 0.0;
}
void store_c(uint i, float v) { C4[i >> 2][i & 3u] = v; }

// Loads step k0's A and B tiles into ra, rb (full: the tile is wholly inside, vec4 loads).
void load_tiles(bool full, uint row0, uint col0, uint k0, uint tid) {
  for (uint l = 0u; l < A_LOADS; ++l) {
    const uint idx = tid + l * THREADS;
    if ((A_VEC % THREADS) != 0 && idx >= A_VEC) break;
    const uint r = row0 + idx / (BK / 4), c = k0 + (idx % (BK / 4)) * 4u;
    if (full)
      ra[l] = A4[(abase + r * p.k + c) >> 2];
    else
      ra[l] = vec4(at_or_zero_a(r, c), at_or_zero_a(r, c + 1u), at_or_zero_a(r, c + 2u), at_or_zero_a(r, c + 3u));
  }
  for (uint l = 0u; l < B_LOADS; ++l) {
    const uint idx = tid + l * THREADS;
    if ((B_VEC % THREADS) != 0 && idx >= B_VEC) break;
    const uint r = k0 + idx / (BN / 4), c = col0 + (idx % (BN / 4)) * 4u;
    if (full)
      rb[l] = B4[(bbase + r * p.n + c) >> 2];
    else
      rb[l] = vec4(at_or_zero_b(r, c), at_or_zero_b(r, c + 1u), at_or_zero_b(r, c + 2u), at_or_zero_b(r, c + 3u));
  }
}

// Stores ra, rb into shared buffer buf (A transposed).
void store_tiles(uint buf, uint tid) {
  for (uint l = 0u; l < A_LOADS; ++l) {
    const uint idx = tid + l * THREADS;
    if ((A_VEC % THREADS) != 0 && idx >= A_VEC) break;
    const uint r = idx / (BK / 4), c = (idx % (BK / 4)) * 4u;
    const uint base = (buf * BK + c) * AS_STRIDE + r;
    As[base] = ra[l].x;
    As[base + AS_STRIDE] = ra[l].y;
    As[base + 2u * AS_STRIDE] = ra[l].z;
    As[base + 3u * AS_STRIDE] = ra[l].w;
  }
  for (uint l = 0u; l < B_LOADS; ++l) {
    const uint idx = tid + l * THREADS;
    if ((B_VEC % THREADS) != 0 && idx >= B_VEC) break;
    const uint r = idx / (BN / 4), c4 = idx % (BN / 4);
    Bs[(buf * BK + r) * (BN / 4) + c4] = rb[l];
  }
}

void main() {
  const uint tid = gl_LocalInvocationID.y * TX + gl_LocalInvocationID.x;
  const uint tx = tid % TX, ty = tid / TX;
  const uint row0 = gl_WorkGroupID.y * BM, col0 = gl_WorkGroupID.x * BN;
  locate();
  const bool full = p.k % BK == 0u && p.n % 4u == 0u && row0 + BM <= p.m && col0 + BN <= p.n;

  vec4 acc[TM][TN / 4];
  for (int i = 0; i < TM; ++i)
    for (int h = 0; h < TN / 4; ++h) acc[i][h] = vec4(0.0);

  load_tiles(full, row0, col0, kbegin, tid);
  store_tiles(0u, tid);
  memoryBarrierShared();  // OpenGL's barrier() does not order shared memory by itself
  barrier();
  const uint steps = (kend - kbegin + BK - 1u) / BK;
  for (uint s = 0u; s < steps; ++s) {
    const uint cur = s & 1u;
    const bool more = s + 1u < steps;
    if (more) load_tiles(full, row0, col0, kbegin + (s + 1u) * BK, tid);
    for (uint kk = 0u; kk < BK; ++kk) {
      const uint arow = (cur * BK + kk) * AS_STRIDE + ty * 4u;
      const uint brow = (cur * BK + kk) * (BN / 4) + tx;
      vec4 b[TN / 4];
      for (uint h = 0u; h < TN / 4; ++h) b[h] = Bs[brow + h * TX];
      for (uint g = 0u; g < TM / 4; ++g) {
        const uint o = arow + g * 4u * TY;
        const vec4 a = vec4(As[o], As[o + 1u], As[o + 2u], As[o + 3u]);
        for (uint h = 0u; h < TN / 4; ++h) {
          acc[g * 4u + 0u][h] = fma(vec4(a.x), b[h], acc[g * 4u + 0u][h]);
          acc[g * 4u + 1u][h] = fma(vec4(a.y), b[h], acc[g * 4u + 1u][h]);
          acc[g * 4u + 2u][h] = fma(vec4(a.z), b[h], acc[g * 4u + 2u][h]);
          acc[g * 4u + 3u][h] = fma(vec4(a.w), b[h], acc[g * 4u + 3u][h]);
        }
      }
    }
    // The other buffer was last read before the previous barrier, so it is free to fill.
    if (more) store_tiles(cur ^ 1u, tid);
    memoryBarrierShared();  // OpenGL's barrier() does not order shared memory by itself
    barrier();
  }

  for (uint g = 0u; g < TM / 4; ++g)
    for (uint i = 0u; i < 4u; ++i) {
      const uint r = row0 + g * 4u * TY + ty * 4u + i;
      for (uint h = 0u; h < TN / 4; ++h) {
        const uint c = col0 + h * 4u * TX + tx * 4u;
        const vec4 v = acc[g * 4u + i][h];
        if (full) {
          C4[(cbase + r * p.n + c) >> 2] = v;
        } else if (r < p.m) {
          const uint o = cbase + r * p.n + c;
          if (c < p.n) store_c(o, v.x);
          if (c + 1u < p.n) store_c(o + 1u, v.y);
          if (c + 2u < p.n) store_c(o + 2u, v.z);
          if (c + 3u < p.n) store_c(o + 3u, v.w);
        }
      }
    }
}

#endif
