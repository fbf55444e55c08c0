// SPDX-License-Identifier: Apache-2.0
// tests/support/numerics.cpp — the references and comparisons declared in numerics.hpp.
#include "support/numerics.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

namespace vgpu_test {

std::vector<float> random_floats(std::size_t n, std::uint64_t seed_offset, float lo, float hi) {
  std::mt19937 rng(static_cast<std::mt19937::result_type>(12345 + seed_offset));
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

Comparison compare(const std::vector<float>& got, const Reference& ref) {
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

std::vector<unsigned char> encode(const std::vector<float>& values, vgpu::DType dtype) {
  std::vector<unsigned char> bytes(values.size() * vgpu::dtype_size(dtype));
  for (std::size_t i = 0; i < values.size(); ++i) vgpu::set_element_value(dtype, bytes.data(), i, values[i]);
  return bytes;
}

std::vector<float> decode(const std::vector<unsigned char>& bytes, vgpu::DType dtype) {
  std::vector<float> values(bytes.size() / vgpu::dtype_size(dtype));
  for (std::size_t i = 0; i < values.size(); ++i)
    values[i] = static_cast<float>(vgpu::element_value(dtype, bytes.data(), i));
  return values;
}

std::vector<float> representable(const std::vector<float>& values, vgpu::DType dtype) {
  return decode(encode(values, dtype), dtype);
}

Reference matmul_reference(const std::vector<float>& a, const std::vector<float>& b, std::size_t m, std::size_t k,
                           std::size_t n, bool tf32) {
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
  for (std::size_t i = 0; i < m * n; ++i)
    r.bound[i] = vgpu::tolerance::matmul(k, absdot[i]) + (tf32 ? vgpu::tolerance::tf32_inputs(absdot[i]) : 0.0);
  return r;
}

Reference axpy_reference(float alpha, const std::vector<float>& x, const std::vector<float>& y) {
  Reference r;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double ax = static_cast<double>(alpha) * x[i];
    r.value.push_back(ax + y[i]);
    r.bound.push_back(vgpu::tolerance::axpy(std::abs(ax), std::abs(static_cast<double>(y[i]))));
  }
  return r;
}

Reference binary_reference(const std::vector<float>& a, const std::vector<float>& b, bool multiply) {
  Reference r;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double v = multiply ? static_cast<double>(a[i]) * b[i] : static_cast<double>(a[i]) + b[i];
    r.value.push_back(v);
    r.bound.push_back(vgpu::tolerance::elementwise(v));
  }
  return r;
}

Reference sum_reference(const std::vector<float>& x) {
  double sum = 0, abs_sum = 0;
  for (float v : x) sum += v, abs_sum += std::abs(static_cast<double>(v));
  return Reference{{sum}, {vgpu::tolerance::reduce_sum(x.size(), abs_sum)}};
}

Reference softmax_reference(const std::vector<float>& x, std::size_t rows, std::size_t cols) {
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

double worst_row_sum_error(const std::vector<float>& out, std::size_t rows, std::size_t cols) {
  double worst = 0;
  for (std::size_t i = 0; i < rows; ++i) {
    double s = 0;
    for (std::size_t j = 0; j < cols; ++j) s += out[i * cols + j];
    worst = std::max(worst, std::isnan(s) ? std::numeric_limits<double>::infinity() : std::abs(s - 1.0));
  }
  return worst;
}

}  // namespace vgpu_test
