// SPDX-License-Identifier: Apache-2.0
// fallback/cpu/kernels/reduce.hpp — the built-in "reduce_sum" kernel: one pass of a
// multi-pass sum; group g sums in[g*block, min(n, (g+1)*block)) into out[g].
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "vgpu/kernels/kernel_abi.hpp"
#include "kernels/cpu_tiles.hpp"
#include "kernels/simd.hpp"

namespace vgpu::cpu::builtin {

/// Vectorised pairwise summation.
///
/// The input is cut into leaves of L = 8 vectors (8·W floats). A leaf is summed as a balanced
/// tree of vector adds (3 levels), and leaf sums are combined pairwise with a binary-counter
/// stack (leaf i merges with its neighbour when i's low bit clears), so the vector partial
/// sums form a balanced tree over the leaves; a partial last leaf is zero-padded and goes
/// through the same tree. Finally the W lanes are added by Simd::hsum (a log2(W) tree).
/// Every input therefore passes through at most ⌈log2(n/(8W))⌉ + 1 + 3 + log2(W) roundings,
/// which bounds the error (u = 2⁻²⁴, ignoring O(u²)):
///     |computed − exact| ≤ (⌈log2 n⌉ + 2) · u · Σ|x_i|,
/// versus (n−1)·u·Σ|x_i| for a naive running sum. Summing leaves as whole vectors keeps the
/// loop as fast as a naive SIMD sum (it is memory-bound either way).
template <class Arch>
struct Reduce {
  using S = Simd<Arch>;
  using V = typename S::V;
  static constexpr std::size_t W = S::W;
  static constexpr std::size_t L = 8;         ///< vectors per leaf
  static constexpr std::size_t LEAF = L * W;  ///< floats per leaf

  /// reduce_sum: slot 0 = in[n], slot 1 = out[ceil(n / kReduceBlock)].
  static void run(const CpuWorkgroup& wg) {
    const std::uint64_t n = wg.params_as<vgpu::kernels::ReduceParams>().n;
    const std::uint64_t g = S::linear_group(wg);
    const std::uint64_t begin = g * vgpu::cpu::kReduceBlock;
    if (begin >= n) return;
    const std::uint64_t end = S::min(n, begin + vgpu::cpu::kReduceBlock);
    wg.buffer<float>(1)[g] = sum(wg.buffer<const float>(0) + begin, end - begin);
  }

  /// Returns the pairwise sum of x[0, len) (see the struct comment for the error bound).
  static float sum(const float* x, std::size_t len) {
    V stack[64];  // partial sums of 2^level leaves, largest at the bottom; 64 levels > any len
    std::size_t depth = 0, leaves = 0;
    auto push = [&](V v) {
      stack[depth++] = v;
      // Leaf number c (1-based) completes one subtree per trailing zero bit of c.
      for (std::size_t c = ++leaves; (c & 1) == 0; c >>= 1) {
        --depth;
        stack[depth - 1] = stack[depth - 1] + stack[depth];
      }
    };
    std::size_t i = 0;
    for (; i + LEAF <= len; i += LEAF) push(leaf(x + i));
    if (i < len) {
      alignas(64) float tail[LEAF] = {};
      std::memcpy(tail, x + i, (len - i) * sizeof(float));
      push(leaf(tail));
    }
    if (depth == 0) return 0.0f;
    V total = stack[depth - 1];
    for (std::size_t d = depth - 1; d-- > 0;) total = stack[d] + total;  // smallest subtrees first
    return S::hsum(total);
  }

 private:
  /// Returns the balanced-tree vector sum of one leaf of L vectors.
  static V leaf(const float* x) noexcept {
    V v[L];
#pragma GCC unroll 8
    for (std::size_t j = 0; j < L; ++j) v[j] = V::load_unaligned(x + j * W);
#pragma GCC unroll 8
    for (std::size_t step = 1; step < L; step *= 2)
#pragma GCC unroll 8
      for (std::size_t j = 0; j + step < L; j += 2 * step) v[j] = v[j] + v[j + step];
    return v[0];
  }
};

}  // namespace vgpu::cpu::builtin
