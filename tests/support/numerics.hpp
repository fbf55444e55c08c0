// SPDX-License-Identifier: Apache-2.0
// tests/support/numerics.hpp — seeded random inputs, double-precision references of the
// built-in ops, and element-wise comparison against per-element error bounds.
//
// Every reference returns both the exact (double) value of each output element and the bound
// its float32 result must stay within; the bounds are derived in the comments next to each
// reference, from u = 2⁻²⁴ (unit roundoff) and eps32 = 2u = FLT_EPSILON.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace vgpu_test {

/// FLT_EPSILON = 2⁻²³ = twice the unit roundoff of float32.
inline constexpr double kEps32 = 1.1920928955078125e-07;
inline constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

/// Returns n floats uniform in [lo, hi) from std::mt19937 seeded with 12345 + seed_offset
/// (callers pass the problem size, so each size gets its own but reproducible data).
inline std::vector<float> random_floats(std::size_t n, std::uint64_t seed_offset, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 rng(static_cast<std::mt19937::result_type>(12345 + seed_offset));
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

/// Exact values and allowed absolute errors of every output element.
struct Reference {
  std::vector<double> value;
  std::vector<double> bound;
};

/// The outcome of comparing float results with a Reference.
struct Comparison {
  std::size_t count = 0, bad = 0, nans = 0, first_nan = 0;
  std::size_t worst = 0;     ///< index of the (non-NaN) element with the largest err/bound ratio
  double worst_ratio = -1;   ///< err/bound there (≤ 1 means within tolerance)
  double got = 0, want = 0, bound = 0;
  bool size_mismatch = false;

  bool ok() const { return !size_mismatch && bad == 0 && nans == 0; }
  std::string describe() const {
    if (size_mismatch) return "result has the wrong number of elements";
    std::ostringstream s;
    s.precision(9);
    s << bad << " of " << count << " elements out of tolerance, " << nans << " NaN";
    if (nans) s << " (first at [" << first_nan << "])";
    if (worst_ratio >= 0)
      s << "; worst at [" << worst << "]: got " << got << ", want " << want << ", |err| " << std::abs(got - want)
        << " vs bound " << bound << " (ratio " << worst_ratio << ")";
    return s.str();
  }
};

/// Compares got with ref element by element; a NaN anywhere is a failure (outputs are
/// poisoned with NaN before every run, so a NaN means an element was never written).
inline Comparison compare(const std::vector<float>& got, const Reference& ref) {
  Comparison c;
  c.count = got.size();
  if (got.size() != ref.value.size() || got.size() != ref.bound.size()) {
    c.size_mismatch = true;
    return c;
  }
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double g = got[i], w = ref.value[i], b = ref.bound[i];
    if (std::isnan(g)) {
      if (c.nans++ == 0) c.first_nan = i;
      continue;
    }
    const double err = std::abs(g - w);
    const double ratio = b > 0 ? err / b : (err == 0 ? 0.0 : std::numeric_limits<double>::infinity());
    if (ratio > 1.0) ++c.bad;
    if (ratio > c.worst_ratio) c.worst = i, c.worst_ratio = ratio, c.got = g, c.want = w, c.bound = b;
  }
  return c;
}

/// C = A·B for row-major A[m×k], B[k×n]. Bound: a float32 dot product of length k, summed in
/// any order (blocked, FMA or not), satisfies |err_ij| ≤ γ_k · Σ_k |a_ik||b_kj| with
/// γ_k = k·u/(1−k·u) ≈ k·u (Higham, Accuracy and Stability, §3.1). We allow 2·k·eps32 = 4·k·u:
/// four times the worst case, still ~1e-4·Σ|a||b| at k = 300, far below any indexing bug.
inline Reference matmul_reference(const std::vector<float>& a, const std::vector<float>& b, std::size_t m,
                                  std::size_t k, std::size_t n) {
  Reference r;
  r.value.assign(m * n, 0.0);
  r.bound.assign(m * n, 0.0);
  std::vector<double> absdot(m * n, 0.0);
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t p = 0; p < k; ++p) {
      const double aip = a[i * k + p];
      for (std::size_t j = 0; j < n; ++j) {
        r.value[i * n + j] += aip * b[p * n + j];
        absdot[i * n + j] += std::abs(aip * b[p * n + j]);
      }
    }
  for (std::size_t i = 0; i < m * n; ++i) r.bound[i] = 2.0 * static_cast<double>(k) * kEps32 * absdot[i];
  return r;
}

/// y = a·x + y. Bound: fused, one rounding (≤ u·|ax+y|); unfused, two (≤ u|ax| + u|ax+y|
/// ≤ 2u(|ax|+|y|)). We allow 2·eps32·(|ax|+|y|): at most 2 eps relative to the operands'
/// magnitude, which cancellation in ax+y cannot make unfair.
inline Reference axpy_reference(float alpha, const std::vector<float>& x, const std::vector<float>& y) {
  Reference r;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double ax = static_cast<double>(alpha) * x[i];
    r.value.push_back(ax + y[i]);
    r.bound.push_back(2.0 * kEps32 * (std::abs(ax) + std::abs(static_cast<double>(y[i]))));
  }
  return r;
}

/// out = a + b or a * b. IEEE add and multiply are correctly rounded (≤ u relative, i.e.
/// half an ulp); we allow 2·eps32 relative to the exact result (≤ 2 eps, "1 ulp-ish"). An exact
/// zero result (a = −b) must come out exactly zero.
inline Reference binary_reference(const std::vector<float>& a, const std::vector<float>& b, bool multiply) {
  Reference r;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double v = multiply ? static_cast<double>(a[i]) * b[i] : static_cast<double>(a[i]) + b[i];
    r.value.push_back(v);
    r.bound.push_back(2.0 * kEps32 * std::abs(v));
  }
  return r;
}

/// Σx. Bound: pairwise (tree) summation of n terms has |err| ≤ ⌈log2 n⌉·u·Σ|x|; a multi-pass
/// reduction adds one level per pass and SIMD lanes a few more. We allow
/// (log2(n) + 8)·eps32·Σ|x|. A naive running sum (error up to (n−1)·u·Σ|x|) fails it at
/// large n on adversarial data (see the 0.1 × 1e6 case in the conformance suite).
inline Reference sum_reference(const std::vector<float>& x) {
  double sum = 0, abs_sum = 0;
  for (float v : x) sum += v, abs_sum += std::abs(static_cast<double>(v));
  const double levels = std::log2(static_cast<double>(x.size() < 2 ? 2 : x.size())) + 8.0;
  return Reference{{sum}, {levels * kEps32 * abs_sum}};
}

/// Row-wise softmax. Bound: relative error ≤ 1e-5 per element. exp costs a few ulp and the
/// final scale one rounding; the row sum of cols terms (each ≤ 1) costs ≤ depth·u, where depth
/// is the summation tree's height: ≤ cols/8 + 3 levels (≈ 7.6e-6 at cols = 1000) for any
/// implementation that keeps at least 8 partial sums, as SIMD lanes and GPU trees do. Plus
/// 1e-37 absolute for results that underflow float32 (exp(−160) is 3e-70 in double but 0 or
/// a flushed denormal in float).
inline Reference softmax_reference(const std::vector<float>& x, std::size_t rows, std::size_t cols) {
  Reference r;
  r.value.resize(rows * cols);
  r.bound.resize(rows * cols);
  for (std::size_t i = 0; i < rows; ++i) {
    double mx = -std::numeric_limits<double>::infinity(), sum = 0;
    for (std::size_t j = 0; j < cols; ++j) mx = std::max(mx, static_cast<double>(x[i * cols + j]));
    for (std::size_t j = 0; j < cols; ++j) sum += std::exp(static_cast<double>(x[i * cols + j]) - mx);
    for (std::size_t j = 0; j < cols; ++j) {
      const double v = std::exp(static_cast<double>(x[i * cols + j]) - mx) / sum;
      r.value[i * cols + j] = v;
      r.bound[i * cols + j] = 1e-5 * v + 1e-37;
    }
  }
  return r;
}

/// Returns the largest |Σ_j out[i,j] − 1| over the rows of a softmax result (in double).
inline double worst_row_sum_error(const std::vector<float>& out, std::size_t rows, std::size_t cols) {
  double worst = 0;
  for (std::size_t i = 0; i < rows; ++i) {
    double s = 0;
    for (std::size_t j = 0; j < cols; ++j) s += out[i * cols + j];
    worst = std::max(worst, std::isnan(s) ? std::numeric_limits<double>::infinity() : std::abs(s - 1.0));
  }
  return worst;
}

}  // namespace vgpu_test
