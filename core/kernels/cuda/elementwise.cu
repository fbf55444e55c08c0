// SPDX-License-Identifier: Apache-2.0
// core/kernels/cuda/elementwise.cu — built-in CUDA kernel (NVRTC at run time, nvcc → L3 fatbin at build time).
// out = a OP b (VGPU_OP: 0 add, 1 mul); one thread per element.
#ifndef VGPU_OP
#define VGPU_OP 0
#endif
struct ElementwiseParams {
  unsigned n, pad0, pad1, pad2;
};
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
