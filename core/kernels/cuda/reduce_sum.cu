// SPDX-License-Identifier: Apache-2.0
// core/kernels/cuda/reduce_sum.cu — built-in CUDA kernel (NVRTC at run time, nvcc → L3 fatbin at build time).
// One pass of a pairwise sum: block g sums 256*8 consecutive inputs into out[g] (strided,
// coalesced loads, then a shared-memory tree). Needs 256 threads per block.
struct ReduceParams {
  unsigned n, pad0, pad1, pad2;
};
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
