// SPDX-License-Identifier: Apache-2.0
// tests/support/numerics.hpp — seeded random inputs, double-precision references of the
// built-in ops, and element-wise comparison against per-element error bounds.
//
// Every reference returns both the exact (double) value of each output element and the bound
// its float32 result must stay within. The bounds are the library's own (vgpu/tolerance.hpp,
// where they are derived), which calibration's result check uses too: one rule for both.
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

#include "vgpu/tolerance.hpp"

namespace vgpu_test {

/// FLT_EPSILON = 2⁻²³ = twice the unit roundoff of float32.
inline constexpr double kEps32 = vgpu::tolerance::kEps32;
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
  std::size_t worst = 0;    ///< index of the (non-NaN) element with the largest err/bound ratio
  double worst_ratio = -1;  ///< err/bound there (≤ 1 means within tolerance)
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

/// C = A·B for row-major A[m×k], B[k×n]. Bound: vgpu::tolerance::matmul, 2·k·eps32·Σ|a||b|.
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
  for (std::size_t i = 0; i < m * n; ++i) r.bound[i] = vgpu::tolerance::matmul(k, absdot[i]);
  return r;
}

/// y = a·x + y. Bound: vgpu::tolerance::axpy, 2·eps32·(|ax|+|y|).
inline Reference axpy_reference(float alpha, const std::vector<float>& x, const std::vector<float>& y) {
  Reference r;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double ax = static_cast<double>(alpha) * x[i];
    r.value.push_back(ax + y[i]);
    r.bound.push_back(vgpu::tolerance::axpy(std::abs(ax), std::abs(static_cast<double>(y[i]))));
  }
  return r;
}

/// out = a + b or a * b. Bound: vgpu::tolerance::elementwise, 2·eps32 relative to the exact
/// result; an exact zero (a = −b) must come out exactly zero.
inline Reference binary_reference(const std::vector<float>& a, const std::vector<float>& b, bool multiply) {
  Reference r;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double v = multiply ? static_cast<double>(a[i]) * b[i] : static_cast<double>(a[i]) + b[i];
    r.value.push_back(v);
    r.bound.push_back(vgpu::tolerance::elementwise(v));
  }
  return r;
}

/// Σx. Bound: vgpu::tolerance::reduce_sum, (log2(n) + 8)·eps32·Σ|x|; a naive running sum fails
/// it at large n on adversarial data (see the 0.1 × 1e6 case in the conformance suite).
inline Reference sum_reference(const std::vector<float>& x) {
  double sum = 0, abs_sum = 0;
  for (float v : x) sum += v, abs_sum += std::abs(static_cast<double>(v));
  return Reference{{sum}, {vgpu::tolerance::reduce_sum(x.size(), abs_sum)}};
}

/// Row-wise softmax. Bound: vgpu::tolerance::softmax, 1e-5 relative per element plus 1e-37
/// absolute for results that underflow float32.
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
      r.bound[i * cols + j] = vgpu::tolerance::softmax(v);
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
