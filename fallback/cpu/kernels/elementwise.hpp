// SPDX-License-Identifier: Apache-2.0
// fallback/cpu/kernels/elementwise.hpp — the built-in "axpy", "add" and "mul" kernels.
// Each linear group handles kElementsPerGroup consecutive elements (the last one fewer).
#pragma once

#include <cstddef>
#include <cstdint>

#include "vgpu/kernels/kernel_abi.hpp"
#include "kernels/cpu_tiles.hpp"
#include "kernels/simd.hpp"

namespace vgpu::cpu::builtin {

/// Elementwise float32 kernels over chunks of kElementsPerGroup elements.
template <class Arch>
struct Elementwise {
  using S = Simd<Arch>;
  using V = typename S::V;
  static constexpr std::size_t W = S::W;

  /// The [begin, end) elements this group owns; empty when the grid overshoots n.
  struct Range {
    std::uint64_t begin = 0, end = 0;
  };
  /// Returns the element range of this group.
  static Range range(const CpuWorkgroup& wg) noexcept {
    const std::uint64_t n = wg.params_as<vgpu::kernels::ElementwiseParams>().n;
    const std::uint64_t begin = S::linear_group(wg) * vgpu::cpu::kElementsPerGroup;
    if (begin >= n) return {};
    return {begin, S::min(n, begin + vgpu::cpu::kElementsPerGroup)};
  }

  /// y = a*x + y; slots 0 = a[1], 1 = x[n], 2 = y[n].
  static void axpy(const CpuWorkgroup& wg) {
    const auto [begin, end] = range(wg);
    if (begin == end) return;
    const float a = wg.buffer<const float>(0)[0];
    const float* x = wg.buffer<const float>(1);
    float* y = wg.buffer<float>(2);
    const V av(a);
    std::uint64_t i = begin;
    for (; i + 2 * W <= end; i += 2 * W) {
      S::fmadd(av, V::load_unaligned(x + i), V::load_unaligned(y + i)).store_unaligned(y + i);
      S::fmadd(av, V::load_unaligned(x + i + W), V::load_unaligned(y + i + W)).store_unaligned(y + i + W);
    }
    for (; i + W <= end; i += W)
      S::fmadd(av, V::load_unaligned(x + i), V::load_unaligned(y + i)).store_unaligned(y + i);
    if (i < end) {  // the tail goes through the same (fused or not) vector op, padded
      alignas(64) float xt[W] = {}, yt[W] = {};
      const std::uint64_t rest = end - i;
      for (std::uint64_t j = 0; j < rest; ++j) {
        xt[j] = x[i + j];
        yt[j] = y[i + j];
      }
      S::fmadd(av, V::load_aligned(xt), V::load_aligned(yt)).store_aligned(yt);
      for (std::uint64_t j = 0; j < rest; ++j) y[i + j] = yt[j];
    }
  }

  /// out = a + b; slots 0 = a, 1 = b, 2 = out.
  static void add(const CpuWorkgroup& wg) {
    binary(
        wg, [](const V& p, const V& q) { return p + q; }, [](float p, float q) { return p + q; });
  }

  /// out = a * b; slots 0 = a, 1 = b, 2 = out.
  static void mul(const CpuWorkgroup& wg) {
    binary(
        wg, [](const V& p, const V& q) { return p * q; }, [](float p, float q) { return p * q; });
  }

 private:
  /// Applies op lane-wise over this group's range; scalar_op finishes the tail.
  template <class Op, class ScalarOp>
  static void binary(const CpuWorkgroup& wg, Op op, ScalarOp scalar_op) {
    const auto [begin, end] = range(wg);
    const float* a = wg.buffer<const float>(0);
    const float* b = wg.buffer<const float>(1);
    float* out = wg.buffer<float>(2);
    std::uint64_t i = begin;
    for (; i + 2 * W <= end; i += 2 * W) {
      op(V::load_unaligned(a + i), V::load_unaligned(b + i)).store_unaligned(out + i);
      op(V::load_unaligned(a + i + W), V::load_unaligned(b + i + W)).store_unaligned(out + i + W);
    }
    for (; i + W <= end; i += W) op(V::load_unaligned(a + i), V::load_unaligned(b + i)).store_unaligned(out + i);
    for (; i < end; ++i) out[i] = scalar_op(a[i], b[i]);
  }
};

}  // namespace vgpu::cpu::builtin
