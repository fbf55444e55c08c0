// SPDX-License-Identifier: Apache-2.0
// vgpu/tolerance.hpp — how far a built-in op's float32 result may be from the exact one: the
// contract every device's kernels meet. The conformance suite holds each device to these
// bounds, and calibration checks each candidate device's (and each matmul tiling's) first
// result against them before it can be chosen (docs/selection.md, "Result check"). Each
// function returns the largest |result − exact| allowed for one output element, from
// u = 2⁻²⁴ (float32's unit roundoff) and kEps32 = 2u = FLT_EPSILON; the derivations are beside
// them. Thread-safety: pure functions.
#pragma once

#include <cmath>
#include <cstdint>

#include "vgpu/export.hpp"
#include "vgpu/types.hpp"

namespace vgpu {

/// What calibration's result check found for a candidate: its first call's outputs against a
/// reference of the same op on the same inputs (docs/selection.md, "Result check").
enum class ResultCheck {
  unchecked,  ///< not run at a checked shape (predicted, ineligible, untimed), or no reference (a user
              ///< kernel without a CPU dialect, or no vgpu CPU device to run it)
  passed,     ///< every checked element within the op's tolerance (vgpu/tolerance.hpp)
  wrong,      ///< a wrong result: never chosen for this op and size class (not eligible; note says how wrong)
};

/// Returns "unchecked", "passed" or "wrong".
VGPU_API const char* to_string(ResultCheck check) noexcept;

}  // namespace vgpu

namespace vgpu::tolerance {

/// FLT_EPSILON = 2⁻²³ = twice the unit roundoff of float32.
inline constexpr double kEps32 = 1.1920928955078125e-07;

/// matmul, C[i,j] = Σ_p A[i,p]·B[p,j] over k terms, given abs_dot = Σ_p |A[i,p]·B[p,j]|. A
/// float32 dot product of length k, summed in any order (blocked, FMA or not, split in slices),
/// has |err| ≤ γ_k·Σ|a||b| with γ_k = k·u/(1 − k·u) ≈ k·u (Higham, Accuracy and Stability, §3.1).
/// Allowed: 2·k·kEps32 = 4·k·u times abs_dot, four times the worst case and still ~1e-4·Σ|a||b|
/// at k = 300, far below any indexing bug or a loop that stopped early.
constexpr double matmul(std::uint64_t k, double abs_dot) noexcept {
  return 2.0 * static_cast<double>(k) * kEps32 * abs_dot;
}

/// matmul on random inputs, as calibration's result check has them (vgpu/selection.hpp): the
/// bound above grows as k and says nothing once k·kEps32 nears 1 (k ≈ 4·10⁶), where a sum that
/// stopped early is well inside it. When the rounding errors are independent and of mean zero,
/// as they are for random inputs, |err| ≤ λ·√k·u·Σ|a||b| (to first order) holds with probability
/// at least 1 − 2k·exp(−λ²/2) for any summation order (Higham and Mary, "A new approach to
/// probabilistic rounding error analysis", SIAM J. Sci. Comput. 41(5), 2019). Allowed: the smaller
/// of matmul() and 16·√k·kEps32·Σ|a||b| (λ = 32: a false alarm is beyond any probability that
/// matters), which a result short by a few thousand terms of a 10⁶-term sum of mean 0.06 exceeds.
inline double matmul_random(std::uint64_t k, double abs_dot) noexcept {
  const double probabilistic = 16.0 * std::sqrt(static_cast<double>(k)) * kEps32 * abs_dot;
  const double worst = matmul(k, abs_dot);
  return probabilistic < worst ? probabilistic : worst;
}

/// axpy, y = a·x + y, given |a·x| and |y| (the input y). Fused it costs one rounding (≤ u·|ax + y|),
/// unfused two (≤ 2u(|ax| + |y|)). Allowed: 2·kEps32·(|ax| + |y|), at most 2 eps relative to the
/// operands' magnitude, which cancellation in ax + y cannot make unfair.
constexpr double axpy(double abs_ax, double abs_y) noexcept { return 2.0 * kEps32 * (abs_ax + abs_y); }

/// add and mul, given the exact result. IEEE add and multiply are correctly rounded (≤ u
/// relative); allowed: 2·kEps32 relative to the exact result. An exact zero (a = −b) must come
/// out exactly zero.
constexpr double elementwise(double exact) noexcept { return 2.0 * kEps32 * (exact < 0 ? -exact : exact); }

/// reduce_sum over n inputs, given abs_sum = Σ|x|. Pairwise (tree) summation of n terms has
/// |err| ≤ ⌈log2 n⌉·u·Σ|x|; a multi-pass reduction adds one level per pass and SIMD lanes a few
/// more. Allowed: (log2(n) + 8)·kEps32·Σ|x|. A naive running sum (up to (n − 1)·u·Σ|x|) fails it
/// at large n on adversarial data.
inline double reduce_sum(std::uint64_t n, double abs_sum) noexcept {
  return (std::log2(static_cast<double>(n < 2 ? 2 : n)) + 8.0) * kEps32 * abs_sum;
}

/// softmax_rows, given the exact value of one element (in [0, 1]). exp costs a few ulp and the
/// final scale one rounding; a row sum of cols terms (each ≤ 1) costs ≤ depth·u, depth being the
/// summation tree's height: ≤ cols/8 + 3 levels (≈ 7.6e-6 at cols = 1000) for any implementation
/// that keeps at least 8 partial sums, as SIMD lanes and GPU trees do. Allowed: 1e-5 relative,
/// plus 1e-37 absolute for results that underflow float32 (exp(−160) is 3e-70 in double but 0 or
/// a flushed denormal in float).
constexpr double softmax(double exact) noexcept { return 1e-5 * exact + 1e-37; }

/// matmul_tf32 (TF32 allowed) adds, to the float32 matmul's bound, the rounding of both inputs
/// of each product to TF32 (10 mantissa bits, relative error ≤ 2⁻¹¹ each): |a'b' − ab| ≤
/// (2·2⁻¹¹ + 2⁻²²)·|ab|, summed over k: (2⁻¹⁰ + 2⁻²²)·Σ|a||b|. A device that computes in float32
/// meets it with room to spare.
constexpr double tf32_inputs(double abs_dot) noexcept { return (0x1p-10 + 0x1p-22) * abs_dot; }

/// Any op above on dtype's arrays: computed in float32 within bound32 of exact (the op's own
/// bound), then, for float16 or bfloat16, rounded once to nearest in the 16-bit format, which adds
/// at most half a unit in its last place: u·|computed| ≤ u·(|exact| + bound32), u being the
/// format's unit roundoff (f16: 2⁻¹¹, bf16: 2⁻⁸), or half its smallest subnormal below its
/// normals (f16: 2⁻²⁵; bf16 shares float32's range, whose subnormals the float32 bound already
/// covers). float32 (and any other dtype): bound32.
constexpr double narrowed(double exact, double bound32, DType dtype) noexcept {
  if (dtype != DType::f16 && dtype != DType::bf16) return bound32;
  const double u = dtype == DType::f16 ? 0x1p-11 : 0x1p-8, half_subnormal = dtype == DType::f16 ? 0x1p-25 : 0.0;
  return bound32 + u * ((exact < 0 ? -exact : exact) + bound32) + half_subnormal;
}

}  // namespace vgpu::tolerance
