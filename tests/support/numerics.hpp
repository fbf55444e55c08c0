// SPDX-License-Identifier: Apache-2.0
// tests/support/numerics.hpp — seeded random inputs, double-precision references of the
// built-in ops, and element-wise comparison against per-element error bounds. Implemented in
// numerics.cpp, which is compiled optimized (test programs are not: tests/CMakeLists.txt), so
// a reference of a large problem costs what it would in the library.
//
// Every reference returns both the exact (double) value of each output element and the bound
// its float32 result must stay within. The bounds are the library's own (vgpu/tolerance.hpp,
// where they are derived), which calibration's result check uses too: one rule for both.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "vgpu/tolerance.hpp"
#include "vgpu/types.hpp"

namespace vgpu_test {

/// FLT_EPSILON = 2⁻²³ = twice the unit roundoff of float32.
inline constexpr double kEps32 = vgpu::tolerance::kEps32;
inline constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

/// Returns n floats uniform in [lo, hi) from std::mt19937 seeded with 12345 + seed_offset
/// (callers pass the problem size, so each size gets its own but reproducible data).
std::vector<float> random_floats(std::size_t n, std::uint64_t seed_offset, float lo = -1.0f, float hi = 1.0f);

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
Comparison compare(const std::vector<float>& got, const Reference& ref);

/// values as the bytes of an array of dtype: each rounded once to nearest even (float16,
/// bfloat16: vgpu::set_element_value), float32's own bits.
std::vector<unsigned char> encode(const std::vector<float>& values, vgpu::DType dtype);
/// The elements of an array of dtype (its bytes) as float values.
std::vector<float> decode(const std::vector<unsigned char>& bytes, vgpu::DType dtype);
/// values rounded to dtype and back: what an array of dtype holds (a reference's inputs).
std::vector<float> representable(const std::vector<float>& values, vgpu::DType dtype);

/// C = A·B for row-major A[m×k], B[k×n]. Bound: vgpu::tolerance::matmul, 2·k·eps32·Σ|a||b|;
/// tf32 (matmul_tf32): plus vgpu::tolerance::tf32_inputs, (2⁻¹⁰ + 2⁻²²)·Σ|a||b|.
Reference matmul_reference(const std::vector<float>& a, const std::vector<float>& b, std::size_t m, std::size_t k,
                           std::size_t n, bool tf32 = false);

/// y = a·x + y. Bound: vgpu::tolerance::axpy, 2·eps32·(|ax|+|y|).
Reference axpy_reference(float alpha, const std::vector<float>& x, const std::vector<float>& y);

/// out = a + b or a * b. Bound: vgpu::tolerance::elementwise, 2·eps32 relative to the exact
/// result; an exact zero (a = −b) must come out exactly zero.
Reference binary_reference(const std::vector<float>& a, const std::vector<float>& b, bool multiply);

/// Σx. Bound: vgpu::tolerance::reduce_sum, (log2(n) + 8)·eps32·Σ|x|; a naive running sum fails
/// it at large n on adversarial data (see the 0.1 × 1e6 case in the conformance suite).
Reference sum_reference(const std::vector<float>& x);

/// Row-wise softmax. Bound: vgpu::tolerance::softmax, 1e-5 relative per element plus 1e-37
/// absolute for results that underflow float32.
Reference softmax_reference(const std::vector<float>& x, std::size_t rows, std::size_t cols);

/// Returns the largest |Σ_j out[i,j] − 1| over the rows of a softmax result (in double).
double worst_row_sum_error(const std::vector<float>& out, std::size_t rows, std::size_t cols);

}  // namespace vgpu_test
