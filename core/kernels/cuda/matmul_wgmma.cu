// SPDX-License-Identifier: Apache-2.0
// core/kernels/cuda/matmul_wgmma.cu — built-in CUDA kernel for Hopper (sm_90a: NVRTC with
// -arch=sm_90a, nvcc's fatbin with sm_90a SASS). C[m×n] = A[m×k]·B[k×n] of float16
// (VGPU_WG_BF16 0) or bfloat16 (1), row-major, any m, n, k: products exact, summed in float32 by
// the warpgroup MMA (wgmma.mma_async m64nNk16), each C element rounded once to nearest even, as
// matmul_mma.cu (the mma.sync kernel, which this one outruns on sm_90: docs/benchmarks.md).
// One block computes a 128×BN tile of C (VGPU_WG_BN 128 or 256) with two multiplying
// warpgroups, rows 0-63 and 64-127, each a 64×BN slab in BN/2 float32 registers per thread:
// 256 threads that also copy, or (VGPU_WG_SPECIALIZED 1) 384, warpgroup 0 copying only. Blocks
// take their tiles in groups of 8 tile-rows, column by column (L2 reuse).
// K is walked 64 at a time through VGPU_WG_STAGES shared-memory stages (dynamic shared memory:
// the module's vgpu_dynamic_shared_bytes, which the CUDA backend reads at load time) laid out
// as the wgmma descriptors' 128-byte swizzle wants them, so wgmma reads them straight from shared
// memory with no ldmatrix:
//  - A, K-major: row r of the tile is 128 bytes (64 elements of K) at r·128, its 16-byte chunk c
//    stored at chunk c ^ (r mod 8); descriptor: 8-row groups 1024 bytes apart (SBO);
//  - B, N-major (wgmma's transposed B): the tile is BN/64 blocks of 64 columns, each 64 K-rows
//    of 128 bytes swizzled the same way; descriptor: blocks B_BLOCK_BYTES apart (LBO), 8-row
//    groups 1024 bytes apart (SBO).
// Each stage is 1024-byte aligned (the swizzle acts on address bits 4-9). The copies are 16-byte
// cp.async (zero-filled past M, N or K; operands whose k and n are multiples of 8 and 16-byte
// aligned), else element by element into the same swizzled places. Pipeline (the specialized
// form's is described at its loop, below): at step s the
// block waits for stage s, fences it into the async proxy (wgmma reads shared memory through
// it), meets at one barrier, issues the copy of step s+STAGES-2 into the stage of step s-2 (whose
// wgmma every warpgroup has waited for before that barrier), then four k16 wgmmas on stage s,
// and waits for all but those (wgmma.wait_group 1): copies two steps ahead, one step of MMAs in
// flight. C is stored from the accumulators two elements at a time where n is even and C is
// aligned, element by element otherwise.
// VGPU_MM_BATCH=1: the params are kernel_abi.hpp's MatmulBatchParams and block z computes one
// product of a stack, as in matmul.cu. Compiled for anything but sm_90a the kernel traps: the
// tuner offers it on compute capability 9.0 only (backends/cuda/cuda_op_tuner.cpp).
#ifndef VGPU_WG_BN
#define VGPU_WG_BN 256
#endif
#ifndef VGPU_WG_STAGES
#define VGPU_WG_STAGES 4
#endif
#ifndef VGPU_WG_BF16
#define VGPU_WG_BF16 0
#endif
#ifndef VGPU_WG_SPECIALIZED
#define VGPU_WG_SPECIALIZED 0
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

#if VGPU_WG_BF16
#define VGPU_WG_TYPE "bf16"
#else
#define VGPU_WG_TYPE "f16"
#endif

namespace {

using elem_t = unsigned short;
constexpr unsigned BM = 128, BN = VGPU_WG_BN, BK = 64, STAGES = VGPU_WG_STAGES;
// Specialized: warpgroup 0 copies, warpgroups 1 and 2 multiply; else both warpgroups do both.
constexpr unsigned LOADERS = VGPU_WG_SPECIALIZED ? 128 : 256, THREADS = VGPU_WG_SPECIALIZED ? 384 : 256;
constexpr unsigned ROW_BYTES = 128;                 // one swizzled row: BK 16-bit elements
constexpr unsigned A_BYTES = BM * ROW_BYTES;        // A's part of a stage
constexpr unsigned B_BLOCK_BYTES = BK * ROW_BYTES;  // one 64-column block of B
constexpr unsigned STAGE_BYTES = A_BYTES + (BN / 64) * B_BLOCK_BYTES;
// + the stages' full and empty mbarriers (specialized), + room to align the first stage.
constexpr unsigned BARRIER_BYTES = VGPU_WG_SPECIALIZED ? 2 * 8 * STAGES : 0;
constexpr unsigned SMEM_BYTES = STAGES * STAGE_BYTES + BARRIER_BYTES + 1024;
static_assert(BN == 128 || BN == 256, "wgmma tiles are 128 or 256 columns wide");
static_assert(VGPU_WG_SPECIALIZED ? STAGES >= 2 : STAGES >= 4,
              "the copy of step s+STAGES-2 must not land on the stages of steps s-1..s+1");
static_assert(SMEM_BYTES <= 227u * 1024u, "sm_90 gives a block at most 227 KB of shared memory");

}  // namespace

// Read by the CUDA backend when it loads the module (cuModuleGetGlobal): the dynamic shared
// memory every launch of this kernel needs.
extern "C" {
__constant__ unsigned vgpu_dynamic_shared_bytes = SMEM_BYTES;
}

namespace {

#if defined(__CUDA_ARCH__) && (defined(__CUDA_ARCH_FEAT_SM90_ALL) || defined(VGPU_WG_SHIMS))
// The PTX primitives (cp.async, fences, wgmma). tests/backends/cuda_wgmma_emulated.cpp defines
// VGPU_WG_SHIMS and its own host versions of exactly these, to run the kernel on a CPU.
#ifndef VGPU_WG_SHIMS
__device__ __forceinline__ unsigned smem_addr(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ unsigned char* dynamic_smem() {
  extern __shared__ __align__(1024) unsigned char vgpu_wg_smem[];
  return vgpu_wg_smem;
}
// 16 bytes global→shared; inside false writes zeros and reads nothing.
__device__ __forceinline__ void cp_async16(void* dst, const void* src, bool inside) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src), "r"(inside ? 16 : 0)
               : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}
// This thread's generic-proxy writes to shared memory (its cp.async and plain stores) become
// visible to the async proxy, through which wgmma reads its operands.
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }
// The accumulators are pinned: the compiler may neither read them early nor move them while a
// wgmma that writes them is in flight.
__device__ __forceinline__ void fence_operands(float (&d)[BN / 2]) {
#pragma unroll
  for (unsigned i = 0; i < BN / 2; ++i) asm volatile("" : "+f"(d[i])::"memory");
}
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
#if VGPU_WG_SPECIALIZED
// mbarriers (specialized): init with an arrival count; arrive (release); wait until the phase
// of the given parity has completed (acquire); and an arrival made when all of this thread's
// earlier cp.async copies have landed (noinc: it counts against the init count).
__device__ __forceinline__ void mbar_init(unsigned long long* bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_arrive(unsigned long long* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem_addr(bar)) : "memory");
}
__device__ __forceinline__ void mbar_wait(unsigned long long* bar, unsigned parity) {
  unsigned done;
  do {
    asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(done)
                 : "r"(smem_addr(bar)), "r"(parity)
                 : "memory");
  } while (!done);
}
__device__ __forceinline__ void cp_async_arrive(unsigned long long* bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(smem_addr(bar)) : "memory");
}
#endif
// d (64×BN of the warpgroup) += A (64×16, K-major, descriptor a) · B (16×BN, N-major, descriptor
// b). The immediates: scale A and B by +1, A not transposed (K-major), B transposed (N-major).
__device__ __forceinline__ void wgmma(float (&d)[BN / 2], unsigned long long a, unsigned long long b) {
#if VGPU_WG_BN == 256
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n256k16.f32." VGPU_WG_TYPE "." VGPU_WG_TYPE
      " "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
      " %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"
      " %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"
      " %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63,"
      " %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79,"
      " %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95,"
      " %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111,"
      " %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127},"
      " %128, %129, p, 1, 1, 0, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]),
        "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]),
        "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]),
        "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]),
        "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]),
        "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]),
        "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]),
        "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]),
        "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]),
        "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]),
        "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]),
        "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]),
        "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), "+f"(d[104]),
        "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), "+f"(d[112]),
        "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]),
        "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
      : "l"(a), "l"(b), "r"(1));
#else
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32." VGPU_WG_TYPE "." VGPU_WG_TYPE
      " "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
      " %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"
      " %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"
      " %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63},"
      " %64, %65, p, 1, 1, 0, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]),
        "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]),
        "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]),
        "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]),
        "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]),
        "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]),
        "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]),
        "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "l"(a), "l"(b), "r"(1));
#endif
}
#endif  // VGPU_WG_SHIMS

// A shared-memory matrix descriptor: start address, leading and stride byte offsets (all in 16-byte
// units), 128-byte swizzle (mode 1 in bits 62-63).
__device__ __forceinline__ unsigned long long descriptor(unsigned addr, unsigned lbo, unsigned sbo) {
  return static_cast<unsigned long long>((addr & 0x3ffffu) >> 4) |
         static_cast<unsigned long long>((lbo >> 4) & 0x3fffu) << 16 |
         static_cast<unsigned long long>((sbo >> 4) & 0x3fffu) << 32 | 1ull << 62;
}

// Byte offset of element (row, col) of a 128-byte-row swizzled tile: 16-byte chunk col/8 of the
// row moves to chunk (col/8) ^ (row mod 8).
__device__ __forceinline__ unsigned swizzled(unsigned row, unsigned col) {
  return row * ROW_BYTES + ((((col >> 3) ^ row) & 7u) << 4) + (col & 7u) * 2;
}

// One 64-deep step of A (rows m0.., columns k0..) and B (rows k0.., columns n0..) into stage st.
__device__ __forceinline__ void load_step(unsigned char* st, const elem_t* __restrict__ A, const elem_t* __restrict__ B,
                                          const MatmulParams& p, unsigned m0, unsigned n0, unsigned k0, bool vec) {
  unsigned char* bs = st + A_BYTES;
  const unsigned tid = threadIdx.x % LOADERS;  // the loading threads: all, or warpgroup 0
  if (vec) {
#pragma unroll
    for (unsigned c = tid; c < BM * BK / 8; c += LOADERS) {
      const unsigned r = c / (BK / 8), kc = (c % (BK / 8)) * 8;
      const bool in = m0 + r < p.m && k0 + kc < p.k;
      cp_async16(st + swizzled(r, kc), in ? A + static_cast<size_t>(m0 + r) * p.k + k0 + kc : A, in);
    }
#pragma unroll
    for (unsigned c = tid; c < BK * BN / 8; c += LOADERS) {
      const unsigned r = c / (BN / 8), nc = (c % (BN / 8)) * 8;
      const bool in = k0 + r < p.k && n0 + nc < p.n;
      cp_async16(bs + (nc / 64) * B_BLOCK_BYTES + swizzled(r, nc % 64),
                 in ? B + static_cast<size_t>(k0 + r) * p.n + n0 + nc : B, in);
    }
    return;
  }
  for (unsigned e = tid; e < BM * BK; e += LOADERS) {
    const unsigned r = e / BK, kk = e % BK;
    *reinterpret_cast<elem_t*>(st + swizzled(r, kk)) =
        m0 + r < p.m && k0 + kk < p.k ? A[static_cast<size_t>(m0 + r) * p.k + k0 + kk] : elem_t(0);
  }
  for (unsigned e = tid; e < BK * BN; e += LOADERS) {
    const unsigned r = e / BN, nn = e % BN;
    *reinterpret_cast<elem_t*>(bs + (nn / 64) * B_BLOCK_BYTES + swizzled(r, nn % 64)) =
        k0 + r < p.k && n0 + nn < p.n ? B[static_cast<size_t>(k0 + r) * p.n + n0 + nn] : elem_t(0);
  }
}

// Two floats rounded to nearest even into one 32-bit word of 16-bit floats (lo in the low half).
#ifndef VGPU_WG_SHIMS
__device__ __forceinline__ unsigned narrow2(float lo, float hi) {
  unsigned w;
#if VGPU_WG_BF16
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(w) : "f"(hi), "f"(lo));
#else
  asm("cvt.rn.f16x2.f32 %0, %1, %2;\n" : "=r"(w) : "f"(hi), "f"(lo));
#endif
  return w;
}
#endif
#define VGPU_WG_ENABLED 1
#endif  // sm_90a

}  // namespace

extern "C" __global__ void __launch_bounds__(THREADS, 1)
    vgpu_matmul_wgmma(const elem_t* __restrict__ A, const elem_t* __restrict__ B, elem_t* __restrict__ C,
                      MatmulParams p) {
#ifdef VGPU_WG_ENABLED
  unsigned char* smem = dynamic_smem();
  smem += (1024u - (smem_addr(smem) & 1023u)) & 1023u;  // the swizzle needs 1024-byte aligned stages
#if VGPU_MM_BATCH
  {  // this block's matrices of the stacks (offsets in whole matrices, 64-bit in elements)
    const unsigned i = p.first + blockIdx.z;
    A += static_cast<size_t>(p.a_base + (i / p.inner) * p.a_outer + (i % p.inner) * p.a_inner) * p.m * p.k;
    B += static_cast<size_t>(p.b_base + (i / p.inner) * p.b_outer + (i % p.inner) * p.b_inner) * p.k * p.n;
    C += static_cast<size_t>(p.c_base + i) * p.m * p.n;
  }
#endif
  // Tiles in groups of 8 tile-rows, column by column within a group: the blocks resident at one
  // time share A's rows and B's columns in L2 (row-major order would stream all of B per wave).
  unsigned tile_x, tile_y;
  {
    constexpr unsigned kGroupRows = 8;
    const unsigned id = blockIdx.y * gridDim.x + blockIdx.x, per_group = kGroupRows * gridDim.x;
    const unsigned first = (id / per_group) * kGroupRows, rows = min(gridDim.y - first, kGroupRows);
    tile_y = first + (id % per_group) % rows;
    tile_x = (id % per_group) / rows;
  }
  const unsigned m0 = tile_y * BM, n0 = tile_x * BN;
  const unsigned group = threadIdx.x / 128;
  const unsigned slab = group - VGPU_WG_SPECIALIZED;  // a multiplying warpgroup's rows: 64·slab.. of the tile
  const bool vec =
      p.k % 8 == 0 && p.n % 8 == 0 && ((reinterpret_cast<size_t>(A) | reinterpret_cast<size_t>(B)) & 15) == 0;
  const unsigned steps = (p.k + BK - 1) / BK;

  float acc[BN / 2];
#pragma unroll
  for (unsigned i = 0; i < BN / 2; ++i) acc[i] = 0.0f;

  // One 64-deep step of this warpgroup's slab on the stage st: four k16 wgmmas (32 bytes into
  // A's rows, 16 rows down B each), committed as one group.
  auto multiply = [&](unsigned st) {
    const unsigned a0 = smem_addr(smem + st * STAGE_BYTES) + slab * 64 * ROW_BYTES;
    const unsigned b0 = smem_addr(smem + st * STAGE_BYTES + A_BYTES);
    fence_operands(acc);
    wgmma_fence();
#pragma unroll
    for (unsigned kk = 0; kk < BK / 16; ++kk)
      wgmma(acc, descriptor(a0 + kk * 32, 16, 8 * ROW_BYTES),
            descriptor(b0 + kk * 16 * ROW_BYTES, B_BLOCK_BYTES, 8 * ROW_BYTES));
    wgmma_commit();
  };
#if VGPU_WG_SPECIALIZED
  // Warpgroup 0 copies step s into stage s mod STAGES once both multiplying warpgroups have
  // released that stage's previous step (empty: 256 arrivals), and marks it full when its copies
  // have landed (full: one arrival per copying thread, made by the hardware after its cp.asyncs
  // or, on the element-wise path, after its fenced stores). Warpgroups 1 and 2 wait for full,
  // multiply, and release step s-1's stage once wgmma.wait_group 1 says its wgmmas are done.
  // No block-wide barrier in the loop: the copies run up to STAGES steps ahead.
  unsigned long long* full = reinterpret_cast<unsigned long long*>(smem + STAGES * STAGE_BYTES);
  unsigned long long* empty = full + STAGES;
  if (threadIdx.x == 0)
    for (unsigned i = 0; i < STAGES; ++i) {
      mbar_init(full + i, LOADERS);
      mbar_init(empty + i, THREADS - LOADERS);
    }
  __syncthreads();
  if (group == 0) {
    for (unsigned s = 0; s < steps; ++s) {
      const unsigned st = s % STAGES;
      if (s >= STAGES) mbar_wait(empty + st, (s / STAGES - 1) & 1);
      load_step(smem + st * STAGE_BYTES, A, B, p, m0, n0, s * BK, vec);
      if (vec) {
        cp_async_arrive(full + st);
      } else {
        fence_proxy_async();
        mbar_arrive(full + st);
      }
    }
    cp_async_commit();
    cp_async_wait<0>();
    return;
  }
  for (unsigned s = 0; s < steps; ++s) {
    mbar_wait(full + s % STAGES, (s / STAGES) & 1);
    fence_proxy_async();
    multiply(s % STAGES);
    wgmma_wait<1>();
    fence_operands(acc);
    if (s > 0) mbar_arrive(empty + (s - 1) % STAGES);
  }
  wgmma_wait<0>();
  fence_operands(acc);
#else
  // Prologue: steps 0..STAGES-3 in flight, one commit per step taken or not, so that
  // wait_group<STAGES-3> below always means "step s has landed".
  for (unsigned s = 0; s + 2 < STAGES; ++s) {
    if (s < steps) load_step(smem + s * STAGE_BYTES, A, B, p, m0, n0, s * BK, vec);
    cp_async_commit();
  }
  for (unsigned s = 0; s < steps; ++s) {
    cp_async_wait<STAGES - 3>();
    fence_proxy_async();
    // Step s is in every thread's view of shared memory, and every warpgroup has waited for its
    // wgmmas of step s-2, whose stage the copy issued next overwrites.
    __syncthreads();
    const unsigned next = s + STAGES - 2;
    if (next < steps) load_step(smem + (next % STAGES) * STAGE_BYTES, A, B, p, m0, n0, next * BK, vec);
    cp_async_commit();
    multiply(s % STAGES);
    wgmma_wait<1>();
    fence_operands(acc);
  }
  wgmma_wait<0>();
  fence_operands(acc);
  cp_async_wait<0>();
#endif

  // Accumulator i of a thread is C[row + 8·((i/2) mod 2)][8·(i/4) + 2·(lane mod 4) + i mod 2]:
  // row = 16·(warp of the warpgroup) + lane/4 (the m64nNk16 D fragment).
  const unsigned lane = threadIdx.x % 32, warp = (threadIdx.x % 128) / 32;
  const bool pairs = p.n % 2 == 0 && (reinterpret_cast<size_t>(C) & 3) == 0;
#pragma unroll
  for (unsigned j = 0; j < BN / 8; ++j)
#pragma unroll
    for (unsigned h = 0; h < 2; ++h) {
      const unsigned row = m0 + slab * 64 + warp * 16 + lane / 4 + h * 8, col = n0 + j * 8 + (lane % 4) * 2;
      if (row >= p.m || col >= p.n) continue;
      elem_t* c = C + static_cast<size_t>(row) * p.n + col;
      const unsigned w = narrow2(acc[4 * j + 2 * h], acc[4 * j + 2 * h + 1]);
      if (pairs) {  // col is even and n is even: col + 1 < n, and the pair is aligned
        *reinterpret_cast<unsigned*>(c) = w;
      } else {
        c[0] = static_cast<elem_t>(w & 0xffffu);
        if (col + 1 < p.n) c[1] = static_cast<elem_t>(w >> 16);
      }
    }
#else
  __trap();  // the tuner offers this kernel on sm_90 only, where it is built for sm_90a
#endif
}
