// SPDX-License-Identifier: Apache-2.0
// core/kernels/cuda/matmul.cu — built-in CUDA kernel (NVRTC at run time, nvcc → L3 fatbin at build time).
// C[m×n] = A[m×k]·B[k×n], row-major float32, any m, n, k.
// One block computes a BM×BN tile of C with TX×TY = (BN/TN)×(BM/TM) threads, each owning TM×TN
// accumulators. K is walked BK at a time through double-buffered shared memory: the next
// step's global loads are in flight (in registers) while the current step is multiplied, so
// one barrier per step suffices.
// Warp tiling: the block's threads form groups of (WM/TM)×(WN/TN) = LY×LX lanes, group (wy, wx)
// owning the WM×WN sub-tile at (wy·WM, wx·WN); with WM×WN chosen so that a group is one warp
// (e.g. 32×64 at 8×8 per thread), a warp's shared-memory reads touch only the A rows and B
// columns of its own sub-tile (fewer wavefronts per step than block-wide striding). The
// defaults WM = BM, WN = BN make the whole block one group: the original block-strided layout.
// Lane (lx, ly) owns rows wy·WM + g·4·LY + ly·4 + i and columns wx·WN + h·4·LX + lx·4 + j
// (g < TM/4, h < TN/4, i, j < 4): its shared-memory reads are float4s that each quarter-warp
// takes from 128 consecutive bytes or one broadcast address (no bank conflicts), and its C
// stores are float4s that a row of lanes writes contiguously. A is stored transposed (K-major)
// with rows padded by 4 floats, which keeps the float4 reads aligned and the transposing stores
// conflict-free.
// Blocks wholly inside C, with k a multiple of BK, n a multiple of 4 and 16-byte aligned
// pointers, take the fast path (float4 global loads and stores, no checks); the others load
// and store element by element with bounds checks. The branch is uniform per block.
// Configuration: VGPU_MM_BM, _BN, _BK, _TM, _TN, _WM, _WN (backends/cuda/cuda_op_tuner.cpp picks
// one per shape) and VGPU_MM_MIN_BLOCKS (blocks per SM the register budget must allow: 2 caps a
// 256-thread block at 128 registers, 1 at 255). The launch block must be (BN/TN, BM/TM, 1).
// VGPU_MM_BATCH=1: the params are kernel_abi.hpp's MatmulBatchParams and block z computes one
// product of a stack (A, B and C move to that product's matrices first; the rest is unchanged).
// VGPU_MM_STAGES (default 0: off, the register-prefetch path above and nothing else is compiled)
// = S >= 2 gives the fast-path blocks an S-stage cp.async pipeline instead (issue 16: the
// register prefetch lands just before its store and barrier, so global latency is exposed with
// few warps per SM; cuBLAS's 3-stage cp.async kernel hides it). Steps s+1..s+S-1 are copied
// global->shared with 16-byte cp.async.cg while step s is multiplied, one barrier per step.
// cp.async cannot transpose, so the pipelined A tile is stored as loaded (BM rows of BK floats,
// unpadded) and a thread reads its A fragment as float4s along K (4 K steps of one row per
// read, the same TM/4 float4 reads per K step as the transposed layout). Per-lane reads stay
// conflict-free because shared-memory float4 reads are served a quarter-warp (8 lanes) at a time
// and with LX = WN/TN = 8 those 8 lanes share ly, hence one A address (a broadcast); a pad would
// only make the cp.async stores (a row's BK floats from consecutive lanes) conflict. B stays
// row-major as before. Edge blocks and unaligned operands keep the checked non-pipelined path.
#ifndef VGPU_MM_BM
#define VGPU_MM_BM 128
#endif
#ifndef VGPU_MM_BN
#define VGPU_MM_BN 128
#endif
#ifndef VGPU_MM_BK
#define VGPU_MM_BK 8
#endif
#ifndef VGPU_MM_TM
#define VGPU_MM_TM 8
#endif
#ifndef VGPU_MM_TN
#define VGPU_MM_TN 8
#endif
#ifndef VGPU_MM_WM
#define VGPU_MM_WM VGPU_MM_BM
#endif
#ifndef VGPU_MM_WN
#define VGPU_MM_WN VGPU_MM_BN
#endif
#ifndef VGPU_MM_MIN_BLOCKS
#define VGPU_MM_MIN_BLOCKS 2
#endif
#ifndef VGPU_MM_STAGES
#define VGPU_MM_STAGES 0
#endif

#ifndef VGPU_MM_BATCH
#define VGPU_MM_BATCH 0
#endif

#if VGPU_MM_BATCH
// kernel_abi.hpp's MatmulBatchParams: block z computes one product of the stacks.
struct MatmulParams {
  unsigned m, n, k, pad, first, inner, a_outer, a_inner, b_outer, b_inner, a_base, b_base, c_base, pad1, pad2, pad3;
};
#else
struct MatmulParams {
  unsigned m, n, k, pad;
};
#endif

namespace {

constexpr unsigned BM = VGPU_MM_BM, BN = VGPU_MM_BN, BK = VGPU_MM_BK, TM = VGPU_MM_TM, TN = VGPU_MM_TN;
constexpr unsigned WM = VGPU_MM_WM, WN = VGPU_MM_WN;
constexpr unsigned TX = BN / TN, TY = BM / TM, THREADS = TX * TY;
constexpr unsigned LX = WN / TN, LY = WM / TM, LANES = LX * LY, GROUPS_X = BN / WN;
constexpr unsigned A_VEC = BM * BK / 4, B_VEC = BK * BN / 4;  // float4s per tile
constexpr unsigned A_LOADS = (A_VEC + THREADS - 1) / THREADS, B_LOADS = (B_VEC + THREADS - 1) / THREADS;
constexpr unsigned AS_STRIDE = BM + 4;
static_assert(TM % 4 == 0 && TN % 4 == 0 && BK % 4 == 0, "TM, TN and BK must be multiples of 4");
static_assert(BM % TM == 0 && BN % TN == 0, "the tile must split evenly over the threads");
static_assert(BM % WM == 0 && BN % WN == 0 && WM % TM == 0 && WN % TN == 0,
              "the warp tile must split the block tile, and the threads the warp tile, evenly");
static_assert(THREADS % LANES == 0, "the block must hold whole groups of lanes");

using TileA = float[2][BK][AS_STRIDE];
using TileB = float[2][BK][BN];

#if VGPU_MM_STAGES
constexpr unsigned STAGES = VGPU_MM_STAGES;
static_assert(STAGES >= 2, "a cp.async pipeline needs at least 2 stages");
static_assert(LX == 8, "the row-major A reads are broadcasts per quarter-warp only when 8 lanes share ly");
// One pipeline stage: A as loaded (BM x BK), then B (BK x BN), 16-byte aligned (BK % 4 == 0).
constexpr unsigned STAGE_A = BM * BK, STAGE_FLOATS = BM * BK + BK * BN;
constexpr unsigned PLAIN_FLOATS = 2 * BK * AS_STRIDE + 2 * BK * BN;
// Both paths' tiles share one array (a block takes one path), so static shared memory stays
// under the 48 KB a kernel may declare without a dynamic-size opt-in.
constexpr unsigned SMEM_FLOATS = STAGES * STAGE_FLOATS > PLAIN_FLOATS ? STAGES* STAGE_FLOATS : PLAIN_FLOATS;
static_assert(SMEM_FLOATS * 4 <= 48u * 1024u, "static shared memory is capped at 48 KB");

#ifndef VGPU_MM_ASYNC_SHIMS
// 16-byte global->shared copy, asynchronous on sm_80+ (cp.async.cg: L2 only, the tile is read
// once per block); a plain copy on older GPUs, where the pipeline then merely runs ahead
// synchronously (still correct: the barrier orders it).
__device__ __forceinline__ void vgpu_cp_async16(float* smem, const float* gmem) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(gmem) : "memory");
#else
  *reinterpret_cast<float4*>(smem) = *reinterpret_cast<const float4*>(gmem);
#endif
}
__device__ __forceinline__ void vgpu_cp_async_commit() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}
// Waits until at most N of this thread's committed groups are still in flight.
template <int N>
__device__ __forceinline__ void vgpu_cp_async_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
#endif
}
#endif
#endif

__device__ __forceinline__ float load_checked(const float* p, size_t index, bool ok) { return ok ? p[index] : 0.0f; }

// Loads the tile of WIDTH columns starting at (r0, c0) of the rows x cols row-major matrix M
// into registers: COUNT float4s spread over the block's threads, zeros where the tile leaves M
// (kFull: it lies wholly inside, so no check is made).
template <bool kFull, unsigned WIDTH, unsigned COUNT, unsigned LOADS>
__device__ __forceinline__ void load_tile(const float* __restrict__ M, unsigned rows, unsigned cols, unsigned r0,
                                          unsigned c0, unsigned tid, float4 (&out)[LOADS]) {
#pragma unroll
  for (unsigned l = 0; l < LOADS; ++l) {
    const unsigned idx = tid + l * THREADS;
    if (COUNT % THREADS != 0 && idx >= COUNT) break;
    const unsigned r = r0 + idx / (WIDTH / 4), c = c0 + (idx % (WIDTH / 4)) * 4;
    const size_t at = (size_t)r * cols + c;
    if (kFull) {
      out[l] = *reinterpret_cast<const float4*>(M + at);
    } else {
      const bool row_ok = r < rows;
      out[l] =
          make_float4(load_checked(M, at, row_ok && c < cols), load_checked(M, at + 1, row_ok && c + 1 < cols),
                      load_checked(M, at + 2, row_ok && c + 2 < cols), load_checked(M, at + 3, row_ok && c + 3 < cols));
    }
  }
}

// Loads the A and B tiles of step k0 into registers.
template <bool kFull>
__device__ __forceinline__ void load_tiles(const float* __restrict__ A, const float* __restrict__ B,
                                           const MatmulParams& p, unsigned row0, unsigned col0, unsigned k0,
                                           unsigned tid, float4 (&ra)[A_LOADS], float4 (&rb)[B_LOADS]) {
  load_tile<kFull, BK, A_VEC>(A, p.m, p.k, row0, k0, tid, ra);
  load_tile<kFull, BN, B_VEC>(B, p.k, p.n, k0, col0, tid, rb);
}

// Stores the registers of load_tiles into shared buffer buf (A transposed).
__device__ __forceinline__ void store_tiles(TileA& As, TileB& Bs, unsigned buf, unsigned tid,
                                            const float4 (&ra)[A_LOADS], const float4 (&rb)[B_LOADS]) {
#pragma unroll
  for (unsigned l = 0; l < A_LOADS; ++l) {
    const unsigned idx = tid + l * THREADS;
    if (A_VEC % THREADS != 0 && idx >= A_VEC) break;
    const unsigned r = idx / (BK / 4), c = (idx % (BK / 4)) * 4;
    As[buf][c + 0][r] = ra[l].x;
    As[buf][c + 1][r] = ra[l].y;
    As[buf][c + 2][r] = ra[l].z;
    As[buf][c + 3][r] = ra[l].w;
  }
#pragma unroll
  for (unsigned l = 0; l < B_LOADS; ++l) {
    const unsigned idx = tid + l * THREADS;
    if (B_VEC % THREADS != 0 && idx >= B_VEC) break;
    const unsigned r = idx / (BN / 4), c = (idx % (BN / 4)) * 4;
    *reinterpret_cast<float4*>(&Bs[buf][r][c]) = rb[l];
  }
}

// Reads a thread's COUNT values of one row of a shared tile: float4 groups SPREAD float4s
// apart, the first at float4 lane (so a warp's reads of one group are contiguous).
template <unsigned COUNT, unsigned SPREAD>
__device__ __forceinline__ void read_fragment(const float* row, unsigned lane, float (&out)[COUNT]) {
#pragma unroll
  for (unsigned g = 0; g < COUNT / 4; ++g) {
    const float4 v = *reinterpret_cast<const float4*>(row + g * 4 * SPREAD + lane * 4);
    out[g * 4 + 0] = v.x;
    out[g * 4 + 1] = v.y;
    out[g * 4 + 2] = v.z;
    out[g * 4 + 3] = v.w;
  }
}

// Stores a thread's accumulators: lane (lx, ly) of the group whose sub-tile starts at (r0, c0).
template <bool kFull>
__device__ __forceinline__ void store_c(float* __restrict__ C, const MatmulParams& p, unsigned r0, unsigned c0,
                                        unsigned lx, unsigned ly, const float (&acc)[TM][TN]) {
#pragma unroll
  for (unsigned g = 0; g < TM / 4; ++g)
#pragma unroll
    for (unsigned i = 0; i < 4; ++i) {
      const unsigned r = r0 + g * 4 * LY + ly * 4 + i;
#pragma unroll
      for (unsigned h = 0; h < TN / 4; ++h) {
        const unsigned c = c0 + h * 4 * LX + lx * 4;
        const float* v = &acc[g * 4 + i][h * 4];
        if (kFull) {
          *reinterpret_cast<float4*>(C + (size_t)r * p.n + c) = make_float4(v[0], v[1], v[2], v[3]);
        } else if (r < p.m) {
#pragma unroll
          for (unsigned j = 0; j < 4; ++j)
            if (c + j < p.n) C[(size_t)r * p.n + c + j] = v[j];
        }
      }
    }
}

template <bool kFull>
__device__ __forceinline__ void matmul_tile(const float* __restrict__ A, const float* __restrict__ B,
                                            float* __restrict__ C, const MatmulParams& p, TileA& As, TileB& Bs) {
  const unsigned tid = threadIdx.y * blockDim.x + threadIdx.x;
  // Group (wy, wx) of LANES threads owns the WM×WN sub-tile; lane (lx, ly) within it.
  const unsigned group = tid / LANES, lane = tid % LANES;
  const unsigned wy = group / GROUPS_X, wx = group % GROUPS_X;
  const unsigned lx = lane % LX, ly = lane / LX;
  const unsigned row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
  float acc[TM][TN];
#pragma unroll
  for (unsigned i = 0; i < TM; ++i)
#pragma unroll
    for (unsigned j = 0; j < TN; ++j) acc[i][j] = 0.0f;

  float4 ra[A_LOADS], rb[B_LOADS];
  load_tiles<kFull>(A, B, p, row0, col0, 0, tid, ra, rb);
  store_tiles(As, Bs, 0, tid, ra, rb);
  __syncthreads();
  const unsigned steps = (p.k + BK - 1) / BK;
  for (unsigned s = 0; s < steps; ++s) {
    const unsigned cur = s & 1u;
    const bool more = s + 1 < steps;
    if (more) load_tiles<kFull>(A, B, p, row0, col0, (s + 1) * BK, tid, ra, rb);
#pragma unroll
    for (unsigned kk = 0; kk < BK; ++kk) {
      float a[TM], b[TN];
      read_fragment<TM, LY>(&As[cur][kk][wy * WM], ly, a);
      read_fragment<TN, LX>(&Bs[cur][kk][wx * WN], lx, b);
#pragma unroll
      for (unsigned i = 0; i < TM; ++i)
#pragma unroll
        for (unsigned j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
    // The other buffer was last read before the previous barrier, so it is free to fill.
    if (more) store_tiles(As, Bs, cur ^ 1u, tid, ra, rb);
    __syncthreads();
  }

  store_c<kFull>(C, p, row0 + wy * WM, col0 + wx * WN, lx, ly, acc);
}

#if VGPU_MM_STAGES
// Issues the cp.async copies of step k0's A and B tiles into stage st (fast path: no checks).
__device__ __forceinline__ void issue_stage(const float* __restrict__ A, const float* __restrict__ B,
                                            const MatmulParams& p, unsigned row0, unsigned col0, unsigned k0,
                                            unsigned tid, float* st) {
#pragma unroll
  for (unsigned l = 0; l < A_LOADS; ++l) {
    const unsigned idx = tid + l * THREADS;
    if (A_VEC % THREADS != 0 && idx >= A_VEC) break;
    const unsigned r = idx / (BK / 4), c = (idx % (BK / 4)) * 4;
    vgpu_cp_async16(st + r * BK + c, A + (size_t)(row0 + r) * p.k + k0 + c);
  }
#pragma unroll
  for (unsigned l = 0; l < B_LOADS; ++l) {
    const unsigned idx = tid + l * THREADS;
    if (B_VEC % THREADS != 0 && idx >= B_VEC) break;
    const unsigned r = idx / (BN / 4), c = (idx % (BN / 4)) * 4;
    vgpu_cp_async16(st + STAGE_A + r * BN + c, B + (size_t)(k0 + r) * p.n + col0 + c);
  }
}

// Reads a thread's A fragment for K steps 4q..4q+3 from a row-major stage: one float4 per row.
__device__ __forceinline__ void read_a_quad(const float* As, unsigned q, unsigned ly, float4 (&out)[TM]) {
#pragma unroll
  for (unsigned g = 0; g < TM / 4; ++g)
#pragma unroll
    for (unsigned i = 0; i < 4; ++i)
      out[g * 4 + i] = *reinterpret_cast<const float4*>(As + (g * 4 * LY + ly * 4 + i) * BK + q * 4);
}

__device__ __forceinline__ float quad_part(const float4& v, unsigned kk) {
  return kk == 0 ? v.x : kk == 1 ? v.y : kk == 2 ? v.z : v.w;  // kk is a constant after unrolling
}

// A whole block on the fast path through the STAGES-deep cp.async pipeline.
__device__ __forceinline__ void matmul_tile_pipelined(const float* __restrict__ A, const float* __restrict__ B,
                                                      float* __restrict__ C, const MatmulParams& p, float* smem) {
  const unsigned tid = threadIdx.y * blockDim.x + threadIdx.x;
  const unsigned group = tid / LANES, lane = tid % LANES;
  const unsigned wy = group / GROUPS_X, wx = group % GROUPS_X;
  const unsigned lx = lane % LX, ly = lane / LX;
  const unsigned row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
  float acc[TM][TN];
#pragma unroll
  for (unsigned i = 0; i < TM; ++i)
#pragma unroll
    for (unsigned j = 0; j < TN; ++j) acc[i][j] = 0.0f;

  const unsigned steps = p.k / BK;  // the fast path has k % BK == 0
  // Prologue: steps 0..STAGES-2 in flight. Every slot commits a group, empty or not, so that
  // "at most STAGES-2 pending" below always means "step s has landed".
#pragma unroll
  for (unsigned st = 0; st + 1 < STAGES; ++st) {
    if (st < steps) issue_stage(A, B, p, row0, col0, st * BK, tid, smem + st * STAGE_FLOATS);
    vgpu_cp_async_commit();
  }
  unsigned cur = 0, fill = STAGES - 1;  // stage read at step s, stage written with step s+STAGES-1
  for (unsigned s = 0; s < steps; ++s) {
    vgpu_cp_async_wait<STAGES - 2>();  // this thread's copies of step s are done
    // All threads' copies of step s are visible, and all threads have finished step s-1, whose
    // stage (fill) is therefore free: the only barrier per step.
    __syncthreads();
    if (s + STAGES - 1 < steps)
      issue_stage(A, B, p, row0, col0, (s + STAGES - 1) * BK, tid, smem + fill * STAGE_FLOATS);
    vgpu_cp_async_commit();
    const float* As = smem + cur * STAGE_FLOATS + wy * WM * BK;
    const float* Bs = smem + cur * STAGE_FLOATS + STAGE_A + wx * WN;
    // Register double buffering: the fragments of K step kk+1 are read before the FMAs of kk
    // (A four steps at a time, the next quad while the last step of the current one runs,
    // when only its .w parts are still live).
    float4 a4[2][TM];
    float b[2][TN];
    read_a_quad(As, 0, ly, a4[0]);
    read_fragment<TN, LX>(Bs, lx, b[0]);
#pragma unroll
    for (unsigned kk = 0; kk < BK; ++kk) {
      if (kk + 1 < BK) {
        read_fragment<TN, LX>(Bs + (kk + 1) * BN, lx, b[(kk + 1) & 1]);
        if ((kk + 1) % 4 == 0) read_a_quad(As, (kk + 1) / 4, ly, a4[((kk + 1) / 4) & 1]);
      }
#pragma unroll
      for (unsigned i = 0; i < TM; ++i) {
        const float a = quad_part(a4[(kk / 4) & 1][i], kk % 4);
#pragma unroll
        for (unsigned j = 0; j < TN; ++j) acc[i][j] = fmaf(a, b[kk & 1][j], acc[i][j]);
      }
    }
    cur = cur + 1 == STAGES ? 0 : cur + 1;
    fill = fill + 1 == STAGES ? 0 : fill + 1;
  }
  vgpu_cp_async_wait<0>();  // only empty groups remain; leave none behind at exit
  store_c<true>(C, p, row0 + wy * WM, col0 + wx * WN, lx, ly, acc);
}
#endif

}  // namespace

extern "C" __global__ void __launch_bounds__(THREADS, VGPU_MM_MIN_BLOCKS)
    vgpu_matmul(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, MatmulParams p) {
#if VGPU_MM_STAGES
  __shared__ __align__(16) float smem[SMEM_FLOATS];
  TileA& As = *reinterpret_cast<TileA*>(smem);
  TileB& Bs = *reinterpret_cast<TileB*>(smem + 2 * BK * AS_STRIDE);
#else
  __shared__ __align__(16) TileA As;
  __shared__ __align__(16) TileB Bs;
#endif
#if VGPU_MM_BATCH
  {  // this block's matrices of the stacks (offsets in whole matrices, 64-bit in elements)
    const unsigned i = p.first + blockIdx.z;
    A += (size_t)(p.a_base + (i / p.inner) * p.a_outer + (i % p.inner) * p.a_inner) * p.m * p.k;
    B += (size_t)(p.b_base + (i / p.inner) * p.b_outer + (i % p.inner) * p.b_inner) * p.k * p.n;
    C += (size_t)(p.c_base + i) * p.m * p.n;
  }
#endif
  const bool vectorisable =
      p.k % BK == 0u && p.n % 4u == 0u &&
      ((reinterpret_cast<size_t>(A) | reinterpret_cast<size_t>(B) | reinterpret_cast<size_t>(C)) & 15u) == 0u;
  if (vectorisable && (blockIdx.y + 1) * BM <= p.m && (blockIdx.x + 1) * BN <= p.n)
#if VGPU_MM_STAGES
    matmul_tile_pipelined(A, B, C, p, smem);
#else
    matmul_tile<true>(A, B, C, p, As, Bs);
#endif
  else
    matmul_tile<false>(A, B, C, p, As, Bs);
}
