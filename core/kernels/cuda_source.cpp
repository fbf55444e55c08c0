// core/kernels/cuda_source.cpp — CUDA C ports of core/kernels/glsl/*.comp. Each entry takes
// one pointer per binding slot (ascending slot order) and then its params struct by value; the
// linear group of a 1-D problem spread over x and y is blockIdx.x + blockIdx.y * gridDim.x.
#include "core/kernels/cuda_source.hpp"

#include <string>

#include "vgpu/error.hpp"

namespace vgpu::kernels {
namespace {

// C[m×n] = A[m×k]·B[k×n], row-major float32: a block of 16×16 threads computes a 64×64 tile of
// C, 4×4 accumulators per thread, K walked in steps of 16 through shared memory. Thread
// (tx, ty) owns rows ty+16i and columns tx+16j (conflict-free shared reads, coalesced stores).
constexpr std::string_view kMatmul = R"CUDA(
struct MatmulParams { unsigned m, n, k, pad; };
#define TM 64
#define TN 64
#define TK 16
extern "C" __global__ void __launch_bounds__(256)
vgpu_matmul(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, MatmulParams p) {
  __shared__ float As[TK][TM + 1];
  __shared__ float Bs[TK][TN];
  const unsigned tx = threadIdx.x, ty = threadIdx.y;
  const unsigned tid = ty * 16u + tx;
  const unsigned row0 = blockIdx.y * TM, col0 = blockIdx.x * TN;
  float acc[4][4];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) acc[i][j] = 0.0f;
  for (unsigned k0 = 0; k0 < p.k; k0 += TK) {
#pragma unroll
    for (unsigned l = 0; l < 4u; ++l) {
      const unsigned idx = tid + l * 256u;
      const unsigned ar = idx / TK, ac = idx % TK;
      const unsigned gr = row0 + ar, gc = k0 + ac;
      As[ac][ar] = (gr < p.m && gc < p.k) ? A[(size_t)gr * p.k + gc] : 0.0f;
      const unsigned br = idx / TN, bc = idx % TN;
      const unsigned grb = k0 + br, gcb = col0 + bc;
      Bs[br][bc] = (grb < p.k && gcb < p.n) ? B[(size_t)grb * p.n + gcb] : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (unsigned kk = 0; kk < TK; ++kk) {
      float a[4], b[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) a[i] = As[kk][ty + 16u * i];
#pragma unroll
      for (int j = 0; j < 4; ++j) b[j] = Bs[kk][tx + 16u * j];
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const unsigned r = row0 + ty + 16u * i;
    if (r >= p.m) continue;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const unsigned c = col0 + tx + 16u * j;
      if (c < p.n) C[(size_t)r * p.n + c] = acc[i][j];
    }
  }
}
)CUDA";

// y = a*x + y; one thread per element.
constexpr std::string_view kAxpy = R"CUDA(
struct ElementwiseParams { unsigned n, pad0, pad1, pad2; };
extern "C" __global__ void vgpu_axpy(const float* __restrict__ a, const float* __restrict__ x, float* y,
                                     ElementwiseParams p) {
  const unsigned g = blockIdx.x + blockIdx.y * gridDim.x;
  const unsigned i = g * blockDim.x + threadIdx.x;
  if (i < p.n) y[i] = fmaf(a[0], x[i], y[i]);
}
)CUDA";

// out = a OP b (VGPU_OP: 0 add, 1 mul); one thread per element.
constexpr std::string_view kElementwise = R"CUDA(
#ifndef VGPU_OP
#define VGPU_OP 0
#endif
struct ElementwiseParams { unsigned n, pad0, pad1, pad2; };
extern "C" __global__ void vgpu_elementwise(const float* __restrict__ a, const float* __restrict__ b,
                                            float* __restrict__ o, ElementwiseParams p) {
  const unsigned g = blockIdx.x + blockIdx.y * gridDim.x;
  const unsigned i = g * blockDim.x + threadIdx.x;
  if (i >= p.n) return;
#if VGPU_OP == 0
  o[i] = a[i] + b[i];
#else
  o[i] = a[i] * b[i];
#endif
}
)CUDA";

// One pass of a pairwise sum: block g sums 256*8 consecutive inputs into out[g] (strided,
// coalesced loads, then a shared-memory tree). Needs 256 threads per block.
constexpr std::string_view kReduceSum = R"CUDA(
struct ReduceParams { unsigned n, pad0, pad1, pad2; };
#define WG 256u
#define ITEMS 8u
extern "C" __global__ void __launch_bounds__(256)
vgpu_reduce_sum(const float* __restrict__ x, float* __restrict__ o, ReduceParams p) {
  __shared__ float partial[WG];
  const unsigned lid = threadIdx.x;
  const unsigned g = blockIdx.x + blockIdx.y * gridDim.x;
  const unsigned long long base = (unsigned long long)g * WG * ITEMS;
  float s = 0.0f;
#pragma unroll
  for (unsigned t = 0; t < ITEMS; ++t) {
    const unsigned long long i = base + t * WG + lid;
    if (i < p.n) s += x[i];
  }
  partial[lid] = s;
  __syncthreads();
  for (unsigned stride = WG / 2u; stride > 0u; stride >>= 1u) {
    if (lid < stride) partial[lid] += partial[lid + stride];
    __syncthreads();
  }
  if (lid == 0u && base < p.n) o[g] = partial[0];
}
)CUDA";

// Numerically stable softmax of each row: one block of 256 threads per row (max, sum of
// exp(x - max), then exp(x - max) / sum).
constexpr std::string_view kSoftmaxRows = R"CUDA(
struct SoftmaxParams { unsigned rows, cols, pad0, pad1; };
#define WG 256u
extern "C" __global__ void __launch_bounds__(256)
vgpu_softmax_rows(const float* __restrict__ x, float* __restrict__ o, SoftmaxParams p) {
  __shared__ float red[WG];
  const unsigned row = blockIdx.x + blockIdx.y * gridDim.x;
  if (row >= p.rows) return;  // uniform per block, so the barriers below stay safe
  const unsigned lid = threadIdx.x;
  const size_t base = (size_t)row * p.cols;
  float m = -3.402823466e+38f;
  for (unsigned c = lid; c < p.cols; c += WG) m = fmaxf(m, x[base + c]);
  red[lid] = m;
  __syncthreads();
  for (unsigned s = WG / 2u; s > 0u; s >>= 1u) {
    if (lid < s) red[lid] = fmaxf(red[lid], red[lid + s]);
    __syncthreads();
  }
  m = red[0];
  __syncthreads();
  float sum = 0.0f;
  for (unsigned c = lid; c < p.cols; c += WG) sum += expf(x[base + c] - m);
  red[lid] = sum;
  __syncthreads();
  for (unsigned s = WG / 2u; s > 0u; s >>= 1u) {
    if (lid < s) red[lid] += red[lid + s];
    __syncthreads();
  }
  const float inv = 1.0f / red[0];
  for (unsigned c = lid; c < p.cols; c += WG) o[base + c] = expf(x[base + c] - m) * inv;
}
)CUDA";

}  // namespace

const std::vector<BuiltinCuda>& builtin_cuda_kernels() {
  static const std::vector<BuiltinCuda> all = {
      {"matmul", "vgpu_matmul", kMatmul},
      {"axpy", "vgpu_axpy", kAxpy},
      {"elementwise", "vgpu_elementwise", kElementwise},
      {"reduce_sum", "vgpu_reduce_sum", kReduceSum},
      {"softmax_rows", "vgpu_softmax_rows", kSoftmaxRows},
  };
  return all;
}

const BuiltinCuda& builtin_cuda(std::string_view name) {
  for (const auto& k : builtin_cuda_kernels())
    if (k.name == name) return k;
  fail(ErrorCategory::internal, "there is no built-in CUDA kernel '" + std::string(name) + "'.",
       "report this as a vgpu bug.");
}

}  // namespace vgpu::kernels
