// SPDX-License-Identifier: Apache-2.0
// tests/conformance/elementwise_test.cpp — axpy, add, mul and reduce_sum on every device under
// test, both paths, at sizes around SIMD widths, workgroup sizes and chunk boundaries.
// Tolerances (derived in support/numerics.hpp):
//   axpy:    |err| ≤ 2·eps32·(|a·x| + |y|)
//   add/mul: |err| ≤ 2·eps32·|exact|
//   reduce:  |err| ≤ (log2(n) + 8)·eps32·Σ|x|
#include "support/catch.hpp"

#include <array>
#include <cstdint>

#include "conformance/conformance.hpp"
#include "support/numerics.hpp"
#include "support/plan_runner.hpp"

namespace vgpu_test {
namespace {

constexpr std::array<std::uint64_t, 10> kSizes{1, 15, 16, 17, 64, 255, 1000, 16384, 16385, 100003};
constexpr std::array<Path, 2> kPaths{Path::persistent, Path::raw};

void expect_close(const std::vector<float>& got, const Reference& ref) {
  const Comparison c = compare(got, ref);
  INFO(c.describe());
  CHECK(c.ok());
}

void check_reduce(vgpu::Device& device, const std::vector<float>& x, Path path) {
  INFO(device.info().id() << " reduce_sum n=" << x.size() << " via " << to_string(path));
  HostTensors args{x, {kNaN}};
  run_plan(device, vgpu::ops::reduce_sum(device.info(), x.size()), args, path);
  expect_close(args[1], sum_reference(x));
  note_exercised(device);
}

}  // namespace

TEST_CASE("axpy: y = a*x + y", "[axpy]") {
  for (vgpu::Device device : devices_under_test())
    for (std::uint64_t n : kSizes)
      for (Path path : kPaths) {
        INFO(device.info().id() << " axpy n=" << n << " via " << to_string(path));
        const auto x = random_floats(n, n), y = random_floats(n, n + 1);
        const float alpha = random_floats(1, n + 2, -4.0f, 4.0f)[0];
        HostTensors args{{alpha}, x, y};
        run_plan(device, vgpu::ops::axpy(device.info(), n), args, path);
        expect_close(args[2], axpy_reference(alpha, x, y));
        note_exercised(device);
      }
}

TEST_CASE("add and mul: elementwise", "[add][mul]") {
  for (vgpu::Device device : devices_under_test())
    for (bool multiply : {false, true})
      for (std::uint64_t n : kSizes)
        for (Path path : kPaths) {
          INFO(device.info().id() << (multiply ? " mul" : " add") << " n=" << n << " via " << to_string(path));
          auto a = random_floats(n, n);
          const auto b = random_floats(n, n + 1);
          if (!multiply && n > 3) a[n / 2] = -b[n / 2];  // an exact zero must come out exactly zero
          HostTensors args{a, b, std::vector<float>(n, kNaN)};
          const auto plan = multiply ? vgpu::ops::mul(device.info(), n) : vgpu::ops::add(device.info(), n);
          run_plan(device, plan, args, path);
          expect_close(args[2], binary_reference(a, b, multiply));
          note_exercised(device);
        }
}

TEST_CASE("reduce_sum: random data at awkward sizes and 1e6", "[reduce]") {
  for (vgpu::Device device : devices_under_test()) {
    for (std::uint64_t n : kSizes)
      for (Path path : kPaths) check_reduce(device, random_floats(n, n), path);
    for (Path path : kPaths) check_reduce(device, random_floats(1000000, 1000000), path);
  }
}

TEST_CASE("reduce_sum: 1e6 copies of 0.1 need pairwise summation", "[reduce]") {
  // A naive float running sum of 10^6 × 0.1f drifts by ~1% (≈ 100958 instead of 100000),
  // three orders of magnitude past the (log2 n + 8)·eps32·Σ|x| ≈ 0.33 bound.
  for (vgpu::Device device : devices_under_test())
    for (Path path : kPaths) check_reduce(device, std::vector<float>(1000000, 0.1f), path);
}

TEST_CASE("reduce_sum: exact integer sums and a single element", "[reduce]") {
  for (vgpu::Device device : devices_under_test())
    for (std::uint64_t n : {1ull, 17ull, 16385ull, 300001ull}) {
      INFO(device.info().id() << " n=" << n);
      std::vector<float> x(n);
      double want = 0;
      for (std::uint64_t i = 0; i < n; ++i) want += x[i] = static_cast<float>(static_cast<int>(i % 7) - 3);
      HostTensors args{x, {kNaN}};
      run_plan(device, vgpu::ops::reduce_sum(device.info(), n), args, Path::persistent);
      CHECK(args[1][0] == static_cast<float>(want));  // small integers: every partial sum is exact
      note_exercised(device);
    }
}

}  // namespace vgpu_test
