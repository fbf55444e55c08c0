// SPDX-License-Identifier: Apache-2.0
// tests/conformance/softmax_test.cpp — row-wise softmax on every device under test, both paths.
// Tolerance (support/numerics.hpp): |err| ≤ 1e-5·ref + 1e-37 per element, and every row sums
// to 1 within 1e-5.
#include "support/catch.hpp"

#include <array>
#include <cmath>

#include "conformance/conformance.hpp"
#include "support/numerics.hpp"
#include "support/plan_runner.hpp"

namespace vgpu_test {
namespace {

constexpr std::array<Path, 2> kPaths{Path::persistent, Path::raw};

void check_softmax(vgpu::Device& device, const std::vector<float>& x, std::uint32_t rows, std::uint32_t cols,
                   Path path) {
  INFO(device.info().id() << " softmax_rows " << rows << "x" << cols << " via " << to_string(path));
  HostTensors args{x, std::vector<float>(x.size(), kNaN)};
  run_plan(device, vgpu::ops::softmax_rows(device.info(), rows, cols), args, path);
  const Comparison c = compare(args[1], softmax_reference(x, rows, cols));
  INFO(c.describe());
  CHECK(c.ok());
  const double row_err = worst_row_sum_error(args[1], rows, cols);
  INFO("worst |row sum - 1| = " << row_err);
  CHECK(row_err <= 1e-5);
  note_exercised(device);
}

}  // namespace

TEST_CASE("softmax_rows: random rows at awkward shapes", "[softmax]") {
  struct Shape2 {
    std::uint32_t rows, cols;
  };
  for (vgpu::Device device : devices_under_test())
    for (Shape2 s : {Shape2{1, 1}, Shape2{15, 17}, Shape2{64, 1000}, Shape2{255, 3}, Shape2{1000, 64}, Shape2{3, 1025}})
      for (Path path : kPaths)
        check_softmax(device, random_floats(std::size_t{s.rows} * s.cols, s.rows * 100000ull + s.cols, -4.0f, 4.0f),
                      s.rows, s.cols, path);
}

TEST_CASE("softmax_rows: large magnitudes do not overflow exp", "[softmax]") {
  // exp(89) overflows float32: without subtracting the row maximum these rows produce inf/NaN.
  constexpr std::uint32_t rows = 6, cols = 33;
  std::vector<float> x = random_floats(rows * cols, 777, -100.0f, 100.0f);  // rows 0-1: uniform in ±100
  for (std::uint32_t j = 0; j < cols; ++j) {
    x[2 * cols + j] = 100.0f;                                  // all equal and huge: exactly uniform 1/cols
    x[3 * cols + j] = (j % 2) ? 80.0f : -80.0f;                // ±80: the −80 entries underflow to ~e-70
    x[4 * cols + j] = -100.0f + 0.5f * static_cast<float>(j);  // all very negative
    x[5 * cols + j] = j == 7 ? 88.5f : 88.0f;                  // near float's exp overflow threshold
  }
  for (vgpu::Device device : devices_under_test())
    for (Path path : kPaths) check_softmax(device, x, rows, cols, path);
}

TEST_CASE("softmax_rows: one column gives exactly 1", "[softmax]") {
  for (vgpu::Device device : devices_under_test()) {
    INFO(device.info().id());
    HostTensors args{random_floats(9, 9, -50.0f, 50.0f), std::vector<float>(9, kNaN)};
    run_plan(device, vgpu::ops::softmax_rows(device.info(), 9, 1), args, Path::persistent);
    for (float v : args[1]) CHECK(v == 1.0f);
    note_exercised(device);
  }
}

}  // namespace vgpu_test
