// SPDX-License-Identifier: Apache-2.0
// fallback/cpu/kernels/portable_batch.hpp — the portable kernel set's "SIMD": four float lanes
// in plain C++, with the members of xsimd::batch that the kernels use, so the same kernel
// templates build for any architecture (riscv64, ppc64le, 32-bit ARM without NEON …) where
// xsimd has no batch type; the compiler vectorises the lane loops with whatever the target's
// baseline offers. On x86-64 and AArch64 the set is built too (VGPU_CPU_ISA=portable), so CI
// runs the conformance suite on it.
#pragma once

#include <cmath>
#include <cstddef>

namespace vgpu::cpu::builtin {

/// The architecture tag of the portable kernel set (what xsimd's arch types are to the others).
struct PortableArch {
  /// Returns the set's name, as VGPU_CPU_ISA and the probe spell it.
  static constexpr const char* name() noexcept { return "portable"; }
};

/// Four floats, loaded, stored and combined lane by lane.
struct PortableBatch {
  static constexpr std::size_t size = 4;
  float lane[size];

  PortableBatch() = default;
  /// Broadcasts x into every lane (as xsimd::batch's converting constructor does).
  PortableBatch(float x) noexcept : lane{x, x, x, x} {}  // NOLINT(google-explicit-constructor)

  /// Returns the four floats at p (any alignment: there is no aligned load to prefer).
  static PortableBatch load_aligned(const float* p) noexcept { return load_unaligned(p); }
  /// Returns the four floats at p.
  static PortableBatch load_unaligned(const float* p) noexcept {
    PortableBatch v;
    for (std::size_t i = 0; i < size; ++i) v.lane[i] = p[i];
    return v;
  }
  /// Stores the lanes at p.
  void store_aligned(float* p) const noexcept { store_unaligned(p); }
  /// Stores the lanes at p.
  void store_unaligned(float* p) const noexcept {
    for (std::size_t i = 0; i < size; ++i) p[i] = lane[i];
  }

  /// Returns f applied to each lane of a and b.
  template <class F>
  static PortableBatch zip(const PortableBatch& a, const PortableBatch& b, F f) noexcept {
    PortableBatch v;
    for (std::size_t i = 0; i < size; ++i) v.lane[i] = f(a.lane[i], b.lane[i]);
    return v;
  }
  friend PortableBatch operator+(const PortableBatch& a, const PortableBatch& b) noexcept {
    return zip(a, b, [](float x, float y) { return x + y; });
  }
  friend PortableBatch operator-(const PortableBatch& a, const PortableBatch& b) noexcept {
    return zip(a, b, [](float x, float y) { return x - y; });
  }
  friend PortableBatch operator*(const PortableBatch& a, const PortableBatch& b) noexcept {
    return zip(a, b, [](float x, float y) { return x * y; });
  }
  friend PortableBatch operator/(const PortableBatch& a, const PortableBatch& b) noexcept {
    return zip(a, b, [](float x, float y) { return x / y; });
  }

  /// Returns a*b + c per lane, rounded once (as the SIMD sets' FMA).
  static PortableBatch fma(const PortableBatch& a, const PortableBatch& b, const PortableBatch& c) noexcept {
    PortableBatch v;
    for (std::size_t i = 0; i < size; ++i) v.lane[i] = std::fma(a.lane[i], b.lane[i], c.lane[i]);
    return v;
  }
  /// Returns the larger lane of a and b per lane (b where either is NaN, as xsimd::max on SSE).
  static PortableBatch max(const PortableBatch& a, const PortableBatch& b) noexcept {
    return zip(a, b, [](float x, float y) { return x > y ? x : y; });
  }
  /// Returns e^x per lane.
  static PortableBatch exp(const PortableBatch& x) noexcept {
    PortableBatch v;
    for (std::size_t i = 0; i < size; ++i) v.lane[i] = std::exp(x.lane[i]);
    return v;
  }
  /// Returns the sum of the lanes, pairwise as the SIMD sets' horizontal sums.
  float sum() const noexcept { return (lane[0] + lane[2]) + (lane[1] + lane[3]); }
};

}  // namespace vgpu::cpu::builtin
