// SPDX-License-Identifier: Apache-2.0
// core/kernels/cuda/axpy.cu — built-in CUDA kernel (NVRTC at run time, nvcc → L3 fatbin at build time).
// y = a*x + y; one thread per element.
struct ElementwiseParams {
  unsigned n, pad0, pad1, pad2;
};
extern "C" __global__ void vgpu_axpy(const float* __restrict__ a, const float* __restrict__ x, float* y,
                                     ElementwiseParams p) {
  const unsigned g = blockIdx.x + blockIdx.y * gridDim.x;
  const unsigned i = g * blockDim.x + threadIdx.x;
  if (i < p.n) y[i] = fmaf(a[0], x[i], y[i]);
}
