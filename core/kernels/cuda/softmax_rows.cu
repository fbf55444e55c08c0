// SPDX-License-Identifier: Apache-2.0
// core/kernels/cuda/softmax_rows.cu — built-in CUDA kernel (NVRTC at run time, nvcc → L3 fatbin at build time).
// Numerically stable softmax of each row: one block of 256 threads per row (max, sum of
// exp(x - max), then exp(x - max) / sum).
struct SoftmaxParams {
  unsigned rows, cols, pad0, pad1;
};
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
