// SPDX-License-Identifier: Apache-2.0
// tests/runtime/half_test.cpp — vgpu/half.hpp, the one 16-bit float rounding every device's
// conversion kernels match bit for bit (tests/conformance/dtype_test.cpp holds them to it):
// every binary16 widens exactly and narrows back to itself; float32 values narrow to the nearest
// 16-bit float by an independent double-precision reference, ties to even, overflow to infinity
// and f16 subnormals included; set_element_value rounds a double once, not through float.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>

#include "support/catch.hpp"
#include "vgpu/half.hpp"
#include "vgpu/types.hpp"

namespace {

// The nearest binary16 value to x (ties to even) by arithmetic in double: the reference.
double nearest_half(double x) {
  const double ax = std::abs(x);
  if (ax >= 65520.0) return std::copysign(std::numeric_limits<double>::infinity(), x);
  const int e = ax == 0 ? -14 : std::max(-14, std::ilogb(ax));
  const double ulp = std::ldexp(1.0, e - 10);
  return std::copysign(std::nearbyint(ax / ulp) * ulp, x);  // the default rounding mode: to even
}

// The nearest bfloat16 value to x: 8 significant bits, float32's exponent range.
double nearest_bf16(double x) {
  const double ax = std::abs(x);
  if (ax == 0 || std::isinf(x)) return x;
  const int e = std::max(-126, std::ilogb(ax));
  const double ulp = std::ldexp(1.0, e - 7);
  const double r = std::nearbyint(ax / ulp) * ulp;
  if (r >= 0x1p128) return std::copysign(std::numeric_limits<double>::infinity(), x);
  return std::copysign(r, x);
}

}  // namespace

TEST_CASE("every binary16 widens exactly and narrows back to itself", "[half]") {
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    const auto bits = static_cast<std::uint16_t>(h);
    const float f = vgpu::half_bits_to_float(bits);
    const std::uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ff;
    const double sign = (h & 0x8000) ? -1.0 : 1.0;
    if (exp == 0x1f) {
      CHECK((man ? std::isnan(f) : std::isinf(f)));
      if (man) CHECK((vgpu::float_to_half_bits(f) & 0x7c00) == 0x7c00);
      continue;
    }
    const double want = exp ? sign * std::ldexp(1.0 + man / 1024.0, int(exp) - 15) : sign * std::ldexp(man, -24);
    INFO(h);
    CHECK(double(f) == want);
    CHECK(vgpu::float_to_half_bits(f) == bits);
    CHECK(vgpu::float_to_bf16_bits(vgpu::bf16_bits_to_float(bits)) == bits);  // every pattern as bf16, likewise
  }
}

TEST_CASE("float32 narrows to the nearest 16-bit float, ties to even", "[half]") {
  std::mt19937 rng(32);
  std::uniform_int_distribution<std::uint32_t> any;
  int bad_f16 = 0, bad_bf16 = 0;
  auto check = [&](float f) {
    if (std::isnan(f)) return;
    if (vgpu::half_bits_to_float(vgpu::float_to_half_bits(f)) != nearest_half(f)) ++bad_f16;
    if (vgpu::bf16_bits_to_float(vgpu::float_to_bf16_bits(f)) != nearest_bf16(f)) ++bad_bf16;
  };
  for (int i = 0; i < 2000000; ++i) {
    std::uint32_t u = any(rng);
    if (i % 2) u = (u & 0x8fffffffu) | 0x30000000u;  // half of them in f16's range and around it
    float f;
    std::memcpy(&f, &u, 4);
    check(f);
  }
  // Ties and their neighbours at every f16 exponent, the largest finite value and past it.
  for (int e = -25; e <= 16; ++e)
    for (int m = 0; m < 64; ++m)
      for (float d : {-1.0f, 0.0f, 1.0f}) {
        const float tie = std::ldexp(1.0f + (2 * m + 1) / 2048.0f, e);
        check(std::nextafter(tie, d > 0 ? 1e9f : d < 0 ? -1e9f : tie));
      }
  for (float f : {65504.0f, 65519.0f, 65520.0f, 65535.0f, 0x1p-25f, 0x1p-26f, 3 * 0x1p-26f, 0x1p-24f, 0.0f, -0.0f})
    check(f);
  CHECK(bad_f16 == 0);
  CHECK(bad_bf16 == 0);
  CHECK(vgpu::float_to_half_bits(65520.0f) == 0x7c00);
  CHECK(vgpu::float_to_half_bits(-0.0f) == 0x8000);
  CHECK(vgpu::float_to_half_bits(std::numeric_limits<float>::quiet_NaN()) == 0x7e00);
  CHECK(vgpu::float_to_bf16_bits(std::numeric_limits<float>::quiet_NaN()) == 0x7fc0);
}

TEST_CASE("set_element_value rounds a double to 16 bits once, not through float", "[half]") {
  // 1 + 2^-11 + 2^-40: float keeps 1 + 2^-11 (a tie for binary16), which rounds to even, 1.0;
  // the double itself is past the tie, so its nearest half is 1 + 2^-10.
  std::uint16_t h = 0;
  vgpu::set_element_value(vgpu::DType::f16, &h, 0, 1.0 + 0x1p-11 + 0x1p-40);
  CHECK(vgpu::half_bits_to_float(h) == 1.0f + 0x1p-10f);
  vgpu::set_element_value(vgpu::DType::f16, &h, 0, -(1.0 + 0x1p-11 + 0x1p-40));
  CHECK(vgpu::half_bits_to_float(h) == -(1.0f + 0x1p-10f));
  vgpu::set_element_value(vgpu::DType::f16, &h, 0, 1.0 + 0x1p-11 - 0x1p-40);  // just below: down
  CHECK(vgpu::half_bits_to_float(h) == 1.0f);
  vgpu::set_element_value(vgpu::DType::bf16, &h, 0, 1.0 + 0x1p-8 + 0x1p-40);
  CHECK(vgpu::bf16_bits_to_float(h) == 1.0f + 0x1p-7f);
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(-70000.0, 70000.0);
  int bad = 0;
  for (int i = 0; i < 200000; ++i) {
    const double x = i % 2 ? u(rng) : u(rng) * 1e-6;
    vgpu::set_element_value(vgpu::DType::f16, &h, 0, x);
    bad += vgpu::half_bits_to_float(h) != nearest_half(x);
  }
  CHECK(bad == 0);
}
