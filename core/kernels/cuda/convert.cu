// SPDX-License-Identifier: Apache-2.0
// core/kernels/cuda/convert.cu — built-in CUDA kernel (NVRTC at run time, nvcc → L3 fatbin at build time).
// The CUDA port of core/kernels/glsl/convert.comp: float32 <-> 16-bit float (p.format 0 f16,
// 1 bf16), VGPU_CONVERT_NARROW 0 widens slot 0 into slot 1, 1 narrows (round to nearest even,
// integer operations only, so its bits equal vgpu/half.hpp's). One thread per pair of
// elements, as the GLSL kernel (one grid for both); CUDA stores 16-bit elements directly.
#ifndef VGPU_CONVERT_NARROW
#define VGPU_CONVERT_NARROW 0
#endif
struct ConvertParams {
  unsigned n, format, pad0, pad1;
};

#if VGPU_CONVERT_NARROW
__device__ unsigned to_half(float f) {
  const unsigned x = __float_as_uint(f);
  const unsigned sign = (x >> 16) & 0x8000u;
  const unsigned ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u) return sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u : 0u);
  if (ax >= 0x477ff000u) return sign | 0x7c00u;
  if (ax < 0x38800000u) {
    const unsigned e = ax >> 23;
    if (e < 102u) return sign;
    const unsigned m = (ax & 0x7fffffu) | 0x800000u, s = 126u - e;
    const unsigned q = m >> s, rem = m & ((1u << s) - 1u), half_ulp = 1u << (s - 1u);
    return sign | (q + ((rem > half_ulp || (rem == half_ulp && (q & 1u))) ? 1u : 0u));
  }
  return sign | ((ax + 0xfffu + ((ax >> 13) & 1u) - 0x38000000u) >> 13);
}
__device__ unsigned to_bf16(float f) {
  const unsigned x = __float_as_uint(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (x >> 16) | 0x40u;
  return (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
}
extern "C" __global__ void vgpu_convert(const float* __restrict__ x, unsigned short* __restrict__ h, ConvertParams p) {
  const unsigned w = (blockIdx.x + blockIdx.y * gridDim.x) * blockDim.x + threadIdx.x;
  for (unsigned i = 2u * w; i < 2u * w + 2u && i < p.n; ++i)
    h[i] = static_cast<unsigned short>(p.format == 0u ? to_half(x[i]) : to_bf16(x[i]));
}
#else
// Exact: every 16-bit float is a float (subnormal halves normalised as vgpu/half.hpp does).
__device__ float half_to_float(unsigned h) {
  const unsigned sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
  if (exp == 0x1fu) return __uint_as_float(sign | 0x7f800000u | (man << 13));
  if (exp != 0u) return __uint_as_float(sign | ((exp + 112u) << 23) | (man << 13));
  if (man == 0u) return __uint_as_float(sign);
  const int shift = __clz(man) - 21;  // leading zeros of man within its 10 bits
  return __uint_as_float(sign | (static_cast<unsigned>(113 - shift) << 23) | (((man << shift) & 0x3ffu) << 13));
}
extern "C" __global__ void vgpu_convert(const unsigned short* __restrict__ h, float* __restrict__ x, ConvertParams p) {
  const unsigned w = (blockIdx.x + blockIdx.y * gridDim.x) * blockDim.x + threadIdx.x;
  for (unsigned i = 2u * w; i < 2u * w + 2u && i < p.n; ++i)
    x[i] = p.format == 0u ? half_to_float(h[i]) : __uint_as_float(static_cast<unsigned>(h[i]) << 16);
}
#endif
