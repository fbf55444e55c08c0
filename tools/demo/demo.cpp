// SPDX-License-Identifier: Apache-2.0
// tools/demo/demo.cpp — vgpu-demo: the seed's loop. One Cache, 100 same-shape matmuls with
// new data each call: the first builds the persistent kernel, the other 99 reuse it.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <exception>
#include <random>
#include <string>

#include "vgpu/vgpu.hpp"

namespace {

constexpr std::uint32_t kN = 16;
constexpr int kCalls = 100;
constexpr const char* kExpectedReport = "VGPUCache: 1 compiles, 99 cache hits, 100 dispatches";

/// Fills m with uniform values in [-1, 1] from rng.
void randomize(vgpu::Matrix& m, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (auto& x : m.data) x = dist(rng);
}

/// Returns max |C - A·B| with A·B accumulated in double.
double max_error_vs_reference(const vgpu::Matrix& a, const vgpu::Matrix& b, const vgpu::Matrix& c) {
  double worst = 0.0;
  for (std::uint32_t i = 0; i < a.rows; ++i)
    for (std::uint32_t j = 0; j < b.cols; ++j) {
      double ref = 0.0;
      for (std::uint32_t p = 0; p < a.cols; ++p) ref += double{a(i, p)} * double{b(p, j)};
      const double err = std::abs(double{c(i, j)} - ref);
      worst = std::isnan(err) ? INFINITY : std::max(worst, err);
    }
  return worst;
}

/// Runs the loop, verifies the last product and the report; returns the exit code.
int run() {
  vgpu::Cache cache;
  // The cache runs each shape on the device measured fastest for it; show that choice (the
  // first process calibrates, later ones read it from the cache directory).
  const vgpu::Selection selection = vgpu::explain("matmul", {kN, kN, kN});
  const vgpu::DeviceInfo info = vgpu::Runtime::global().open(selection.device).info();
  std::printf("device: %s  %s (%s, %s)\n", info.id().c_str(), info.name.c_str(),
              std::string(vgpu::to_string(info.type)).c_str(), info.vendor.c_str());
  std::printf("selection: %s", selection.describe().c_str());

  std::mt19937 rng(42);
  vgpu::Matrix a(kN, kN), b(kN, kN), c;
  double seconds = 0.0, first = 0.0;
  for (int call = 0; call < kCalls; ++call) {
    randomize(a, rng);  // new data every call: only uploads change, nothing recompiles
    randomize(b, rng);
    const auto start = std::chrono::steady_clock::now();
    c = cache.matmul(a, b);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    seconds += s;
    if (call == 0) first = s;
  }

  // Tolerance: K=16 products of values in [-1,1] stay below 16 in magnitude; float32 sums of
  // 16 terms are off by far less than 1e-4 of that.
  const double err = max_error_vs_reference(a, b, c);
  const double tol = 1e-4 * kN;
  std::printf("%d calls of %ux%u matmul: mean %.2f us per call (first %.2f us incl. build, then mean %.2f us)\n",
              kCalls, kN, kN, seconds / kCalls * 1e6, first * 1e6, (seconds - first) / (kCalls - 1) * 1e6);
  std::printf("last result vs double reference: max_abs_error %.3g (limit %.3g) %s\n", err, tol,
              err <= tol ? "OK" : "MISMATCH");

  const std::string report = cache.report();
  std::printf("%s\n", report.c_str());
  if (!(err <= tol)) return 1;
  if (report != kExpectedReport) {
    std::fprintf(stderr, "vgpu-demo: expected \"%s\"\n", kExpectedReport);
    return 1;
  }
  return 0;
}

}  // namespace

/// Runs the demo; a vgpu::Error prints its message (which ends in a Fix: hint) and exits 3.
int main() {
  try {
    return run();
  } catch (const vgpu::Error& e) {
    std::fprintf(stderr, "vgpu-demo: error: %s\n", e.what());
    return 3;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "vgpu-demo: unexpected error: %s\n", e.what());
    return 4;
  }
}
