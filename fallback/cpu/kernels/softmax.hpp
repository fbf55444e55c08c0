// SPDX-License-Identifier: Apache-2.0
// fallback/cpu/kernels/softmax.hpp — the built-in "softmax_rows" kernel: one group per row,
// out[r, :] = exp(x[r, :] − max) / Σ exp(x[r, :] − max), which never overflows exp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>

#include "vgpu/kernels/kernel_abi.hpp"
#include "kernels/simd.hpp"

namespace vgpu::cpu::builtin {

/// Numerically stable row-wise softmax, vectorised in all three passes (max, exp+sum, scale).
template <class Arch>
struct Softmax {
  using S = Simd<Arch>;
  using V = typename S::V;
  static constexpr std::size_t W = S::W;

  /// softmax_rows: slot 0 = x[rows×cols], slot 1 = out[rows×cols]; linear group = row.
  static void run(const CpuWorkgroup& wg) {
    const auto& p = wg.params_as<vgpu::kernels::SoftmaxParams>();
    const std::uint64_t row = S::linear_group(wg);
    if (row >= p.rows || p.cols == 0) return;
    const std::size_t cols = p.cols;
    const float* x = wg.buffer<const float>(0) + row * cols;
    float* out = wg.buffer<float>(1) + row * cols;
    const std::size_t body = cols - cols % W;  // columns handled as whole vectors
    const std::size_t rest = cols - body;

    // Pass 1: the row maximum. The tail is padded with -inf, which cannot win.
    alignas(64) float tail[W];
    V vmax(-std::numeric_limits<float>::infinity());
    for (std::size_t j = 0; j < body; j += W) vmax = S::max(vmax, V::load_unaligned(x + j));
    if (rest) {
      for (std::size_t l = 0; l < W; ++l) tail[l] = l < rest ? x[body + l] : -std::numeric_limits<float>::infinity();
      vmax = S::max(vmax, V::load_aligned(tail));
    }
    const V mx(S::hmax(vmax));

    // Pass 2: e = exp(x − max), stored into out, summed in two accumulators (the sum of
    // positive terms ≤ 1 each has relative error ≤ (cols/2W + log2 W)·u — ample for softmax).
    V s0(0.0f), s1(0.0f);
    std::size_t j = 0;
    for (; j + 2 * W <= body; j += 2 * W) {
      const V e0 = S::exp(V::load_unaligned(x + j) - mx);
      const V e1 = S::exp(V::load_unaligned(x + j + W) - mx);
      e0.store_unaligned(out + j);
      e1.store_unaligned(out + j + W);
      s0 = s0 + e0;
      s1 = s1 + e1;
    }
    for (; j < body; j += W) {
      const V e = S::exp(V::load_unaligned(x + j) - mx);
      e.store_unaligned(out + j);
      s0 = s0 + e;
    }
    float sum = S::hsum(s0 + s1);
    if (rest) {  // the padded lanes computed exp(-inf) = 0 but are dropped explicitly anyway
      S::exp(V::load_aligned(tail) - mx).store_aligned(tail);
      for (std::size_t l = 0; l < rest; ++l) {
        out[body + l] = tail[l];
        sum += tail[l];
      }
    }

    // Pass 3: scale by 1/sum (sum ≥ 1, since the maximum contributes exp(0) = 1).
    const float inv = 1.0f / sum;
    const V vinv(inv);
    for (j = 0; j < body; j += W) (V::load_unaligned(out + j) * vinv).store_unaligned(out + j);
    for (; j < cols; ++j) out[j] *= inv;
  }
};

}  // namespace vgpu::cpu::builtin
