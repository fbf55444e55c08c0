// SPDX-License-Identifier: Apache-2.0
// fallback/cpu/kernels/convert.hpp — the built-in "convert_widen" and "convert_narrow" kernels:
// float32 <-> 16-bit float (kernel_abi.hpp's ConvertParams), the steps the f16/bf16 plans wrap
// an op's float32 kernels in. Each linear group converts kElementsPerGroup consecutive
// elements; the bit conversions are vgpu/half.hpp's (forced inline, so compiled for this ISA).
#pragma once

#include <cstdint>
#include <type_traits>

#if defined(__AVX2__) || defined(__AVX512F__)
#include <immintrin.h>
#endif

#include "vgpu/half.hpp"
#include "vgpu/kernels/kernel_abi.hpp"
#include "kernels/cpu_tiles.hpp"
#include "kernels/simd.hpp"

namespace vgpu::cpu::builtin {

/// Conversions between float32 and f16/bf16 over chunks of kElementsPerGroup elements: 8 or 16
/// lanes at a time with F16C / AVX-512 conversions (f16) and integer rounding (bf16) where the
/// ISA has them, vgpu/half.hpp for the rest. Bits equal half.hpp's everywhere: the hardware's
/// f16 narrowing rounds to nearest even as it does, and vectors holding a NaN are redone with
/// half.hpp (the hardware keeps NaN payloads, half.hpp makes one quiet NaN).
template <class Arch>
struct Convert {
  using S = Simd<Arch>;

  /// slot 0 = 16-bit in[n], slot 1 = float32 out[n].
  static void widen(const CpuWorkgroup& wg) {
    const auto& q = wg.params_as<vgpu::kernels::ConvertParams>();
    const auto [begin, end] = range(wg, q.n);
    const auto* in = wg.buffer<const std::uint16_t>(0);
    float* out = wg.buffer<float>(1);
    const bool bf16 = q.format == vgpu::kernels::kConvertBf16;
    std::uint64_t i = begin;
#if defined(__AVX512F__)
    if constexpr (std::is_base_of_v<xsimd::avx512f, Arch>) {
      for (; i + 16 <= end; i += 16) {
        const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + i));
        _mm512_storeu_ps(
            out + i, bf16 ? _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)) : _mm512_cvtph_ps(h));
      }
    }
#endif
#if defined(__F16C__) && defined(__AVX2__)
    if constexpr (std::is_base_of_v<xsimd::avx2, Arch>) {
      for (; i + 8 <= end; i += 8) {
        const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i));
        _mm256_storeu_ps(
            out + i, bf16 ? _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16)) : _mm256_cvtph_ps(h));
      }
    }
#endif
    if (bf16)
      for (; i < end; ++i) out[i] = bf16_bits_to_float(in[i]);
    else
      for (; i < end; ++i) out[i] = half_bits_to_float(in[i]);
  }

  /// slot 0 = float32 in[n], slot 1 = 16-bit out[n], rounded to nearest even.
  static void narrow(const CpuWorkgroup& wg) {
    const auto& q = wg.params_as<vgpu::kernels::ConvertParams>();
    const auto [begin, end] = range(wg, q.n);
    const float* in = wg.buffer<const float>(0);
    auto* out = wg.buffer<std::uint16_t>(1);
    const bool bf16 = q.format == vgpu::kernels::kConvertBf16;
    std::uint64_t i = begin;
#if defined(__AVX512F__)
    if constexpr (std::is_base_of_v<xsimd::avx512f, Arch>) {
      const __m512i round = _mm512_set1_epi32(0x7fff), one = _mm512_set1_epi32(1);
      for (; i + 16 <= end; i += 16) {
        const __m512 v = _mm512_loadu_ps(in + i);
        if (_mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q) != 0) {  // a NaN: half.hpp's bits
          scalar(in, out, i, i + 16, bf16);
          continue;
        }
        __m256i h;
        if (bf16) {
          const __m512i x = _mm512_castps_si512(v);
          const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(x, 16), one);
          h = _mm512_cvtepi32_epi16(_mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(x, round), lsb), 16));
        } else {
          h = _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        }
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), h);
      }
    }
#endif
#if defined(__F16C__) && defined(__AVX2__)
    if constexpr (std::is_base_of_v<xsimd::avx2, Arch>) {
      const __m256i round = _mm256_set1_epi32(0x7fff), one = _mm256_set1_epi32(1);
      for (; i + 8 <= end; i += 8) {
        const __m256 v = _mm256_loadu_ps(in + i);
        if (_mm256_movemask_ps(_mm256_cmp_ps(v, v, _CMP_UNORD_Q)) != 0) {  // a NaN: half.hpp's bits
          scalar(in, out, i, i + 8, bf16);
          continue;
        }
        __m128i h;
        if (bf16) {
          const __m256i x = _mm256_castps_si256(v);
          const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(x, 16), one);
          const __m256i r = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(x, round), lsb), 16);
          // packus works within 128-bit halves: gather the two halves' low quadwords.
          h = _mm256_castsi256_si128(_mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0x08));
        } else {
          h = _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        }
        _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), h);
      }
    }
#endif
    scalar(in, out, i, end, bf16);
  }

 private:
  /// Narrows [i, end) with vgpu/half.hpp.
  static void scalar(const float* in, std::uint16_t* out, std::uint64_t i, std::uint64_t end, bool bf16) noexcept {
    if (bf16)
      for (; i < end; ++i) out[i] = float_to_bf16_bits(in[i]);
    else
      for (; i < end; ++i) out[i] = float_to_half_bits(in[i]);
  }

  struct Range {
    std::uint64_t begin = 0, end = 0;
  };
  /// The [begin, end) elements this group owns; empty when the grid overshoots n.
  static Range range(const CpuWorkgroup& wg, std::uint64_t n) noexcept {
    const std::uint64_t begin = S::linear_group(wg) * vgpu::cpu::kElementsPerGroup;
    if (begin >= n) return {};
    return {begin, S::min(n, begin + vgpu::cpu::kElementsPerGroup)};
  }
};

}  // namespace vgpu::cpu::builtin
