// SPDX-License-Identifier: Apache-2.0
// Converts n elements between float32 and a 16-bit float (p.format: 0 IEEE half "f16", 1
// bfloat16): VGPU_CONVERT_NARROW=0 widens slot 0 (16-bit) into slot 1 (float32), =1 narrows slot
// 0 (float32) into slot 1 (16-bit), rounding to nearest even. The f16/bf16 plans
// (core/runtime/kernel_cache/dtype_plan.cpp) wrap an op's float32 kernels in these steps.
// GLSL 4.3 has no 16-bit storage type, so 16-bit arrays are read and written as 32-bit words,
// two elements each, one word per invocation: no two invocations share a word. The last word
// of an odd n holds one element; its other half (past the array, inside the buffer's last
// word: GL and Vulkan allocate and bind storage buffers in whole words) is written back as it
// was. Both directions use integer operations only (vgpu/half.hpp's twins), so every driver
// gives the same bits. Widening is exact; it does not use unpackHalf2x16, which lavapipe on
// AArch64 (Debian 12: Mesa 22.3, LLVM 15) cannot compile: LLVM aborts the process ("Cannot
// select: v4f32 = truncate v4i32"), for bfloat16 too (one shader serves both formats).
VGPU_PARAMS { uint n; uint format; uint pad0; uint pad1; } p;

#if VGPU_CONVERT_NARROW
layout(std430, binding = 0) readonly buffer BufIn { float x[]; };
layout(std430, binding = 1) buffer BufOut { uint h[]; };

uint to_half(float f) {
  const uint x = floatBitsToUint(f);
  const uint sign = (x >> 16) & 0x8000u;
  const uint ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u) return sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u : 0u);
  if (ax >= 0x477ff000u) return sign | 0x7c00u;  // rounds past 65504
  if (ax < 0x38800000u) {                        // a subnormal half: a count of 2^-24, rounded even
    const uint e = ax >> 23;
    if (e < 102u) return sign;
    const uint m = (ax & 0x7fffffu) | 0x800000u, s = 126u - e;
    const uint q = m >> s, rem = m & ((1u << s) - 1u), half_ulp = 1u << (s - 1u);
    return sign | (q + ((rem > half_ulp || (rem == half_ulp && (q & 1u) != 0u)) ? 1u : 0u));
  }
  return sign | ((ax + 0xfffu + ((ax >> 13) & 1u) - 0x38000000u) >> 13);
}

uint to_bf16(float f) {
  const uint x = floatBitsToUint(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (x >> 16) | 0x40u;  // NaN stays a quiet NaN
  return (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
}

uint narrow(float f) { return p.format == 0u ? to_half(f) : to_bf16(f); }

void main() {
  const uint w = VGPU_LINEAR_GROUP * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
  const uint i = 2u * w;
  if (i >= p.n) return;
  const uint lo = narrow(x[i]);
  const uint hi = i + 1u < p.n ? narrow(x[i + 1u]) : h[w] >> 16;
  h[w] = lo | (hi << 16);
}
#else
layout(std430, binding = 0) readonly buffer BufIn { uint h[]; };
layout(std430, binding = 1) writeonly buffer BufOut { float x[]; };

// vgpu/half.hpp's half_bits_to_float: infinities and NaNs (payload kept), normals, then zero and
// subnormals (m·2^-24, whose top bit sets the float's exponent).
float half_to_float(uint b) {
  const uint sign = (b & 0x8000u) << 16, e = (b >> 10) & 0x1fu, m = b & 0x3ffu;
  if (e == 0x1fu) return uintBitsToFloat(sign | 0x7f800000u | (m << 13));
  if (e != 0u) return uintBitsToFloat(sign | ((e + 112u) << 23) | (m << 13));
  if (m == 0u) return uintBitsToFloat(sign);
  const int top = findMSB(m);  // 0 .. 9
  return uintBitsToFloat(sign | (uint(top + 103) << 23) | ((m << uint(23 - top)) & 0x7fffffu));
}

float widen(uint b) { return p.format == 0u ? half_to_float(b) : uintBitsToFloat(b << 16); }

void main() {
  const uint w = VGPU_LINEAR_GROUP * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
  const uint i = 2u * w;
  if (i >= p.n) return;
  const uint word = h[w];
  x[i] = widen(word & 0xffffu);
  if (i + 1u < p.n) x[i + 1u] = widen(word >> 16);
}
#endif
