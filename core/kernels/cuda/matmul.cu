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

struct MatmulParams { unsigned m, n, k, pad; };

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
      out[l] = make_float4(load_checked(M, at, row_ok && c < cols), load_checked(M, at + 1, row_ok && c + 1 < cols),
                           load_checked(M, at + 2, row_ok && c + 2 < cols),
                           load_checked(M, at + 3, row_ok && c + 3 < cols));
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

#pragma unroll
  for (unsigned g = 0; g < TM / 4; ++g)
#pragma unroll
    for (unsigned i = 0; i < 4; ++i) {
      const unsigned r = row0 + wy * WM + g * 4 * LY + ly * 4 + i;
#pragma unroll
      for (unsigned h = 0; h < TN / 4; ++h) {
        const unsigned c = col0 + wx * WN + h * 4 * LX + lx * 4;
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

}  // namespace

extern "C" __global__ void __launch_bounds__(THREADS, VGPU_MM_MIN_BLOCKS)
vgpu_matmul(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, MatmulParams p) {
  __shared__ __align__(16) TileA As;
  __shared__ __align__(16) TileB Bs;
  const bool vectorisable =
      p.k % BK == 0u && p.n % 4u == 0u &&
      ((reinterpret_cast<size_t>(A) | reinterpret_cast<size_t>(B) | reinterpret_cast<size_t>(C)) & 15u) == 0u;
  if (vectorisable && (blockIdx.y + 1) * BM <= p.m && (blockIdx.x + 1) * BN <= p.n)
    matmul_tile<true>(A, B, C, p, As, Bs);
  else
    matmul_tile<false>(A, B, C, p, As, Bs);
}
