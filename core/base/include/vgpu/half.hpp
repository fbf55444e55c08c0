// SPDX-License-Identifier: Apache-2.0
// vgpu/half.hpp — the one definition of vgpu's 16-bit float conversions (IEEE binary16 "f16" and
// bfloat16 "bf16"), header-only so the CPU kernels inline them. Narrowing rounds to nearest even
// with integer operations only, so the GLSL and CUDA twins (core/kernels/glsl/convert.comp,
// core/kernels/cuda/convert.cu) give the same bits on every device: overflow gives infinity,
// NaN stays a quiet NaN, f16 subnormals are exact. Thread-safety: pure functions.
#pragma once

#include <bit>
#include <cstdint>

// Forced inline: the CPU kernels are compiled once per ISA (fallback/cpu/kernels/simd.hpp says
// why), and an out-of-line copy built with AVX-512 flags must never be the one another TU calls.
#if defined(_MSC_VER) && !defined(__clang__)
#define VGPU_HALF_INLINE __forceinline
#else
#define VGPU_HALF_INLINE [[gnu::always_inline]] inline
#endif

namespace vgpu {

/// Returns the float an IEEE binary16 bit pattern holds (exact: every half is a float).
VGPU_HALF_INLINE constexpr float half_bits_to_float(std::uint16_t h) noexcept {
  const std::uint32_t sign = std::uint32_t{h & 0x8000u} << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
  if (exp == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (man << 13));
  if (exp != 0) return std::bit_cast<float>(sign | ((exp + 112) << 23) | (man << 13));
  if (man == 0) return std::bit_cast<float>(sign);
  // A subnormal half, man·2^-24: normalise it into a float.
  int shift = 0;
  std::uint32_t m = man;
  while ((m & 0x400u) == 0) {
    m <<= 1;
    ++shift;
  }
  return std::bit_cast<float>(sign | (static_cast<std::uint32_t>(113 - shift) << 23) | ((m & 0x3ffu) << 13));
}

/// Returns f as an IEEE binary16 bit pattern, rounded to nearest even (past 65504: infinity).
VGPU_HALF_INLINE constexpr std::uint16_t float_to_half_bits(float f) noexcept {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  const std::uint32_t sign = (x >> 16) & 0x8000u;
  const std::uint32_t ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u) return static_cast<std::uint16_t>(sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u : 0u));
  if (ax >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // rounds past 65504
  if (ax < 0x38800000u) {  // below the smallest normal half: a count of 2^-24, rounded even
    const std::uint32_t e = ax >> 23;
    if (e < 102) return static_cast<std::uint16_t>(sign);               // below 2^-25: rounds to zero
    const std::uint32_t m = (ax & 0x7fffffu) | 0x800000u, s = 126 - e;  // s in 14 … 24
    const std::uint32_t q = m >> s, rem = m & ((1u << s) - 1u), half = 1u << (s - 1);
    return static_cast<std::uint16_t>(sign | (q + ((rem > half || (rem == half && (q & 1u))) ? 1u : 0u)));
  }
  const std::uint32_t lsb = (ax >> 13) & 1u;
  return static_cast<std::uint16_t>(sign | ((ax + 0xfffu + lsb - 0x38000000u) >> 13));
}

/// Returns the float a bfloat16 bit pattern holds (its top 16 bits).
VGPU_HALF_INLINE constexpr float bf16_bits_to_float(std::uint16_t b) noexcept {
  return std::bit_cast<float>(std::uint32_t{b} << 16);
}

/// Returns f as a bfloat16 bit pattern, rounded to nearest even (NaN stays a quiet NaN).
VGPU_HALF_INLINE constexpr std::uint16_t float_to_bf16_bits(float f) noexcept {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((x >> 16) | 0x40u);
  return static_cast<std::uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

}  // namespace vgpu
