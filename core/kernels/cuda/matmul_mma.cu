// SPDX-License-Identifier: Apache-2.0
// core/kernels/cuda/matmul_mma.cu — built-in CUDA kernel (NVRTC at run time, nvcc → L3 fatbin at build time).
// C[m×n] = A[m×k]·B[k×n] on the tensor cores (sm_80+), row-major, any m, n, k, in one of two modes:
// - 16-bit (VGPU_MMA_TF32 0): float16 (VGPU_MMA_BF16 0) or bfloat16 (1) in, products exact and
//   summed in float32 by mma.sync.m16n8k16, each C element rounded once to nearest even into the
//   same 16-bit format;
// - TF32 (VGPU_MMA_TF32 1, the opt-in precision "tf32"): float32 in and out, each input rounded
//   to TF32 (10 mantissa bits, cvt.rna: to nearest, ties away) as it leaves shared memory, the
//   products summed in float32 by mma.sync.m16n8k8.
// One block computes a BM×BN tile of C with (BM/WM)·(BN/WN) warps, each owning a WM×WN
// sub-tile as (WM/16)×(WN/8) mma tiles of float32 accumulators. K is walked BK at a time through
// an S-stage pipeline of shared-memory tiles (A: BM rows of BK, B: BK rows of BN, rows padded so
// that one fragment load's rows fall in distinct banks): steps s+1..s+S-1 are copied
// global→shared with 16-byte cp.async while step s is multiplied, one barrier per step.
// 16-bit fragments come from shared memory by ldmatrix (A as stored; B transposed on the way,
// .trans, since mma wants B column-major); TF32 fragments by one 32-bit load per element.
// Operands whose rows are whole 16-byte chunks (k and n multiples of 8 halves or 4 floats) and
// 16-byte aligned take the vector path (16-byte cp.async; chunks past M, N or K are zero-filled
// by a source size of 0, so edge blocks need no other case); the others fill the tiles element
// by element with bounds checks. The branch is uniform per launch. C is stored two elements at a
// time where both are inside C and n is even, element by element otherwise.
// Rounding of 16-bit C: cvt.rn (IEEE round to nearest even, overflow to ±inf, subnormals kept)
// gives the bits vgpu/half.hpp gives for every non-NaN value; a NaN comes out as the canonical
// quiet NaN (vgpu/half.hpp keeps its sign and payload's top bits). docs/numerics.md.
// Configuration: VGPU_MMA_BM, _BN, _BK, _WM, _WN, _STAGES (backends/cuda/cuda_op_tuner.cpp's
// tensor-core tilings); the launch block must be ((BM/WM)·(BN/WN)·32, 1, 1). VGPU_MM_BATCH=1, as
// in matmul.cu: the params are kernel_abi.hpp's MatmulBatchParams and block z computes one
// product of a stack (A, B and C move to that product's matrices first). Compiled for an
// older GPU than sm_80 the kernel traps: the tuner offers it only on sm_80 and later.
#ifndef VGPU_MMA_BM
#define VGPU_MMA_BM 128
#endif
#ifndef VGPU_MMA_BN
#define VGPU_MMA_BN 128
#endif
#ifndef VGPU_MMA_BK
#define VGPU_MMA_BK 32
#endif
#ifndef VGPU_MMA_WM
#define VGPU_MMA_WM 64
#endif
#ifndef VGPU_MMA_WN
#define VGPU_MMA_WN 32
#endif
#ifndef VGPU_MMA_STAGES
#define VGPU_MMA_STAGES 2
#endif
#ifndef VGPU_MMA_BF16
#define VGPU_MMA_BF16 0
#endif
#ifndef VGPU_MMA_TF32
#define VGPU_MMA_TF32 0
#endif

#ifndef VGPU_MM_BATCH
#define VGPU_MM_BATCH 0
#endif

#if VGPU_MM_BATCH
// kernel_abi.hpp's MatmulBatchParams: block z computes one product of the stacks (as matmul.cu).
struct MatmulParams {
  unsigned m, n, k, pad, first, inner, a_outer, a_inner, b_outer, b_inner, a_base, b_base, c_base, pad1, pad2, pad3;
};
#else
struct MatmulParams {
  unsigned m, n, k, pad;
};
#endif

namespace {

constexpr unsigned BM = VGPU_MMA_BM, BN = VGPU_MMA_BN, BK = VGPU_MMA_BK, WM = VGPU_MMA_WM, WN = VGPU_MMA_WN;
constexpr unsigned STAGES = VGPU_MMA_STAGES;
constexpr unsigned WARPS_N = BN / WN, THREADS = (BM / WM) * WARPS_N * 32;
#if VGPU_MMA_TF32
using elem_t = float;
// Rows padded by 4 (A) and 8 (B) floats: lanes (g, t) of a fragment load read A[g][t] and
// B[t][g], at banks 20g + t and 8t + g (mod 32): all 32 distinct.
constexpr unsigned AS = BK + 4, BS = BN + 8;
#else
using elem_t = unsigned short;
// Rows padded by 8 halves (16 bytes): the 8 row addresses of one ldmatrix fall in distinct banks.
constexpr unsigned AS = BK + 8, BS = BN + 8;
#endif
constexpr unsigned CHUNK = 16 / sizeof(elem_t);  // elements per 16-byte copy
constexpr unsigned STAGE_ELEMS = BM * AS + BK * BS;
static_assert(BM % WM == 0 && BN % WN == 0 && WM % 16 == 0 && WN % 16 == 0 && BK % 16 == 0,
              "warp tiles must split the block tile, in 16-row, 16-column and 16-deep steps");
static_assert((BM * BK / CHUNK) % THREADS == 0 && (BK * BN / CHUNK) % THREADS == 0,
              "every thread copies the same number of 16-byte chunks");
static_assert(STAGES >= 2, "a cp.async pipeline needs at least 2 stages");
static_assert(STAGES * STAGE_ELEMS * sizeof(elem_t) <= 48u * 1024u, "static shared memory is capped at 48 KB");

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
constexpr unsigned MT = WM / 16, NT = WN / 8;       // mma tiles per warp
constexpr unsigned KSTEP = VGPU_MMA_TF32 ? 8 : 16;  // K of one mma
constexpr unsigned STAGE_A = BM * AS;               // A's part of a stage; B's follows

// The PTX primitives (cp.async, ldmatrix, mma, cvt). tests/backends/cuda_mma_emulated.cpp
// defines VGPU_MMA_SHIMS and its own host versions of exactly these, to run the kernel on a CPU.
#ifndef VGPU_MMA_SHIMS
__device__ __forceinline__ unsigned smem_addr(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// 16 bytes global→shared; src_bytes 0 writes zeros and reads nothing.
__device__ __forceinline__ void cp_async16(elem_t* dst, const elem_t* src, bool inside) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src), "r"(inside ? 16 : 0)
               : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

#if VGPU_MMA_TF32
// x rounded to TF32 (to nearest, ties away from zero), as the tensor cores read it.
__device__ __forceinline__ unsigned to_tf32(float x) {
  unsigned r;
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(x));
  return r;
}

// d += a·b for one 16×8 tile, k 8.
__device__ __forceinline__ void mma1688(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
#else
__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], const unsigned short* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}
__device__ __forceinline__ void ldmatrix_x4_trans(unsigned (&r)[4], const unsigned short* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}

// d += a·b for one 16×8 tile, k 16.
__device__ __forceinline__ void mma16816(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
#if VGPU_MMA_BF16
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
#else
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
#endif
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Two floats rounded to nearest even into one 32-bit word of 16-bit floats (lo in the low half).
__device__ __forceinline__ unsigned narrow2(float lo, float hi) {
  unsigned w;
#if VGPU_MMA_BF16
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(w) : "f"(hi), "f"(lo));
#else
  asm("cvt.rn.f16x2.f32 %0, %1, %2;\n" : "=r"(w) : "f"(hi), "f"(lo));
#endif
  return w;
}
#endif  // VGPU_MMA_TF32
#endif  // VGPU_MMA_SHIMS

// One BK step of A (rows m0.., columns k0..) and B (rows k0.., columns n0..) into stage st.
__device__ __forceinline__ void load_step(elem_t* st, const elem_t* __restrict__ A, const elem_t* __restrict__ B,
                                          const MatmulParams& p, unsigned m0, unsigned n0, unsigned k0, bool vec) {
  elem_t* as = st;
  elem_t* bs = st + STAGE_A;
  const unsigned tid = threadIdx.x;
  if (vec) {
#pragma unroll
    for (unsigned c = tid; c < BM * BK / CHUNK; c += THREADS) {
      const unsigned r = c / (BK / CHUNK), kc = (c % (BK / CHUNK)) * CHUNK;
      const bool in = m0 + r < p.m && k0 + kc < p.k;
      cp_async16(as + r * AS + kc, in ? A + static_cast<size_t>(m0 + r) * p.k + k0 + kc : A, in);
    }
#pragma unroll
    for (unsigned c = tid; c < BK * BN / CHUNK; c += THREADS) {
      const unsigned r = c / (BN / CHUNK), nc = (c % (BN / CHUNK)) * CHUNK;
      const bool in = k0 + r < p.k && n0 + nc < p.n;
      cp_async16(bs + r * BS + nc, in ? B + static_cast<size_t>(k0 + r) * p.n + n0 + nc : B, in);
    }
    return;
  }
  for (unsigned e = tid; e < BM * BK; e += THREADS) {
    const unsigned r = e / BK, kk = e % BK;
    as[r * AS + kk] = m0 + r < p.m && k0 + kk < p.k ? A[static_cast<size_t>(m0 + r) * p.k + k0 + kk] : elem_t(0);
  }
  for (unsigned e = tid; e < BK * BN; e += THREADS) {
    const unsigned r = e / BN, nn = e % BN;
    bs[r * BS + nn] = k0 + r < p.k && n0 + nn < p.n ? B[static_cast<size_t>(k0 + r) * p.n + n0 + nn] : elem_t(0);
  }
}

#endif  // __CUDA_ARCH__ >= 800

}  // namespace

extern "C" __global__ void __launch_bounds__(THREADS)
    vgpu_matmul_mma(const elem_t* __restrict__ A, const elem_t* __restrict__ B, elem_t* __restrict__ C,
                    MatmulParams p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  __shared__ __align__(16) elem_t smem[STAGES * STAGE_ELEMS];
#if VGPU_MM_BATCH
  {  // this block's matrices of the stacks (offsets in whole matrices, 64-bit in elements)
    const unsigned i = p.first + blockIdx.z;
    A += static_cast<size_t>(p.a_base + (i / p.inner) * p.a_outer + (i % p.inner) * p.a_inner) * p.m * p.k;
    B += static_cast<size_t>(p.b_base + (i / p.inner) * p.b_outer + (i % p.inner) * p.b_inner) * p.k * p.n;
    C += static_cast<size_t>(p.c_base + i) * p.m * p.n;
  }
#endif
  const unsigned m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  const unsigned warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const unsigned wm0 = (warp / WARPS_N) * WM, wn0 = (warp % WARPS_N) * WN;
  const bool vec =
      p.k % CHUNK == 0 && p.n % CHUNK == 0 && ((reinterpret_cast<size_t>(A) | reinterpret_cast<size_t>(B)) & 15) == 0;
  const unsigned steps = (p.k + BK - 1) / BK;

  float acc[MT][NT][4];
#pragma unroll
  for (unsigned i = 0; i < MT; ++i)
#pragma unroll
    for (unsigned j = 0; j < NT; ++j)
#pragma unroll
      for (unsigned e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;

  // Prologue: steps 0..S-2 in flight. One commit per step, taken or not, so that
  // wait_group<S-2> below always means "step s has landed".
  for (unsigned s = 0; s + 1 < STAGES; ++s) {
    if (s < steps) load_step(smem + s * STAGE_ELEMS, A, B, p, m0, n0, s * BK, vec);
    cp_async_commit();
  }
  for (unsigned s = 0; s < steps; ++s) {
    cp_async_wait<STAGES - 2>();
    // Step s is visible to every thread, and every warp is done with step s-1's stage, which
    // the copy issued next overwrites.
    __syncthreads();
    const unsigned next = s + STAGES - 1;
    if (next < steps) load_step(smem + (next % STAGES) * STAGE_ELEMS, A, B, p, m0, n0, next * BK, vec);
    cp_async_commit();
    const elem_t* as = smem + (s % STAGES) * STAGE_ELEMS;
    const elem_t* bs = as + STAGE_A;
#pragma unroll
    for (unsigned kk = 0; kk < BK; kk += KSTEP) {
#if VGPU_MMA_TF32
      // Lane (g, t) = (lane / 4, lane % 4): a0..a3 = A[g][t], A[g+8][t], A[g][t+4], A[g+8][t+4] of
      // each 16×8 tile; b0, b1 = B[t][g], B[t+4][g] of each 8×8 one.
      const unsigned g = lane / 4, t = lane % 4;
      unsigned a[MT][4];
#pragma unroll
      for (unsigned i = 0; i < MT; ++i) {
        const elem_t* ap = as + (wm0 + i * 16 + g) * AS + kk + t;
        a[i][0] = to_tf32(ap[0]);
        a[i][1] = to_tf32(ap[8 * AS]);
        a[i][2] = to_tf32(ap[4]);
        a[i][3] = to_tf32(ap[8 * AS + 4]);
      }
#pragma unroll
      for (unsigned j = 0; j < NT; ++j) {
        const elem_t* bp = bs + (kk + t) * BS + wn0 + j * 8 + g;
        const unsigned b0 = to_tf32(bp[0]), b1 = to_tf32(bp[4 * BS]);
#pragma unroll
        for (unsigned i = 0; i < MT; ++i) mma1688(acc[i][j], a[i], b0, b1);
      }
#else
      unsigned a[MT][4];
#pragma unroll
      for (unsigned i = 0; i < MT; ++i)  // lanes 0-15: rows 0-15 at k 0; lanes 16-31: rows 0-15 at k 8
        ldmatrix_x4(a[i], as + (wm0 + i * 16 + lane % 16) * AS + kk + (lane / 16) * 8);
#pragma unroll
      for (unsigned j = 0; j < NT; j += 2) {
        // Matrices (k 0-7, n 0-7), (k 8-15, n 0-7), (k 0-7, n 8-15), (k 8-15, n 8-15): the b0, b1
        // of n tiles j and j+1.
        unsigned b[4];
        ldmatrix_x4_trans(b, bs + (kk + lane % 8 + ((lane / 8) % 2) * 8) * BS + wn0 + j * 8 + (lane / 16) * 8);
#pragma unroll
        for (unsigned i = 0; i < MT; ++i) {
          mma16816(acc[i][j], a[i], b[0], b[1]);
          mma16816(acc[i][j + 1], a[i], b[2], b[3]);
        }
      }
#endif
    }
  }
  cp_async_wait<0>();

  // Accumulator e of tile (i, j) is C[row + (e / 2)·8][col + e % 2], row = lane / 4, col = (lane % 4)·2.
  const bool pairs = p.n % 2 == 0 && (reinterpret_cast<size_t>(C) & (2 * sizeof(elem_t) - 1)) == 0;
#pragma unroll
  for (unsigned i = 0; i < MT; ++i)
#pragma unroll
    for (unsigned j = 0; j < NT; ++j)
#pragma unroll
      for (unsigned h = 0; h < 2; ++h) {
        const unsigned row = m0 + wm0 + i * 16 + lane / 4 + h * 8, col = n0 + wn0 + j * 8 + (lane % 4) * 2;
        if (row >= p.m || col >= p.n) continue;
        elem_t* c = C + static_cast<size_t>(row) * p.n + col;
        const float lo = acc[i][j][2 * h], hi = acc[i][j][2 * h + 1];
#if VGPU_MMA_TF32
        if (pairs) {  // col is even and n is even: col + 1 < n, and the pair is aligned
          *reinterpret_cast<float2*>(c) = make_float2(lo, hi);
        } else {
          c[0] = lo;
          if (col + 1 < p.n) c[1] = hi;
        }
#else
        const unsigned w = narrow2(lo, hi);
        if (pairs) {
          *reinterpret_cast<unsigned*>(c) = w;
        } else {
          c[0] = static_cast<unsigned short>(w & 0xffffu);
          if (col + 1 < p.n) c[1] = static_cast<unsigned short>(w >> 16);
        }
#endif
      }
#else
  __trap();  // the tuner offers tensor-core tilings on sm_80 and later only
#endif
}
