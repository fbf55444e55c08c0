// SPDX-License-Identifier: Apache-2.0
// tools/probe/self_test.cpp — the per-device matmul self-test.
#include "self_test.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>
#include <sstream>
#include <vector>

#include "vgpu/error.hpp"
#include "vgpu/ops.hpp"
#include "vgpu/persistent_kernel.hpp"
#include "vgpu/persistent_queue.hpp"
#include "vgpu/queue_kernels.hpp"

namespace vgpu::probe {
namespace {

using Clock = std::chrono::steady_clock;

/// Returns the seconds elapsed since start.
double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

/// Fills a vector of count floats uniformly in [-1, 1] from rng.
std::vector<float> random_values(std::mt19937& rng, std::size_t count) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(count);
  for (auto& x : v) x = dist(rng);
  return v;
}

/// Returns C = A·B for square n×n row-major matrices, accumulated in double.
std::vector<double> reference_matmul(const std::vector<float>& a, const std::vector<float>& b, std::size_t n) {
  std::vector<double> c(n * n, 0.0);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t p = 0; p < n; ++p) {
      const double aip = a[i * n + p];
      for (std::size_t j = 0; j < n; ++j) c[i * n + j] += aip * b[p * n + j];
    }
  return c;
}

/// Runs the add-one queue on dev: kQueueSelfTestItems items, ids out of order, one launch.
void queue_self_test(Device& dev, SelfTestResult& r) {
  try {
    QueuePipeline pipeline(dev, queue_add_one_kernel());
    PersistentQueue q;
    for (std::uint32_t i = 0; i < kQueueSelfTestItems; ++i) q.push_value(1000 - 7 * i, 3 * i * i + 1);
    const QueueReport report = pipeline.run(q);
    r.queue_launches = report.kernel_launches;
    bool right = report.results.size() == q.size() && report.kernel_launches == 1;
    for (std::uint32_t i = 0; right && i < q.size(); ++i)
      right = report.results[i].id == q.id(i) && report.results[i].payload.size() == 4 &&
              report.results[i].as<std::uint32_t>() == 3 * i * i + 2;
    r.queue_passed = right;
  } catch (const Error& e) {
    r.queue_error = e.what();
  }
}

}  // namespace

std::string self_test_description() {
  std::ostringstream os;
  os << kSelfTestSize << "x" << kSelfTestSize << "x" << kSelfTestSize
     << " float32 matmul, random inputs in [-1,1] (seed " << kSelfTestSeed
     << "), against a double-precision reference;\n  "
     << "an add-one queue of " << kQueueSelfTestItems << " u32 items (docs/queue.md)";
  return os.str();
}

std::string self_test_criterion() {
  std::ostringstream os;
  os << "PASS when max|C-ref| <= " << kSelfTestRelTol << " * max(1, max|ref|) and every queue item comes back +1, "
     << "by id, from one launch";
  return os.str();
}

SelfTestResult run_self_test(Runtime& runtime, const DeviceInfo& device) {
  SelfTestResult r;
  constexpr std::uint32_t n = kSelfTestSize;
  std::mt19937 rng(kSelfTestSeed);
  const std::vector<float> a = random_values(rng, std::size_t{n} * n);
  const std::vector<float> b = random_values(rng, std::size_t{n} * n);
  std::vector<float> c(std::size_t{n} * n, 0.0f);
  const std::vector<double> ref = reference_matmul(a, b, n);

  double ref_max = 0.0;
  for (double v : ref) ref_max = std::max(ref_max, std::abs(v));
  r.tolerance = kSelfTestRelTol * std::max(1.0, ref_max);

  const auto start = Clock::now();
  try {
    Device dev = runtime.open(device);
    PersistentKernel kernel(dev, ops::matmul(dev, n, n, n));
    r.build_seconds = seconds_since(start);
    const auto run_start = Clock::now();
    kernel({TensorArg(a.data(), {n, n}), TensorArg(b.data(), {n, n}), TensorArg(c.data(), {n, n})});
    r.run_seconds = seconds_since(run_start);
    queue_self_test(dev, r);
  } catch (const Error& e) {
    r.seconds = seconds_since(start);
    r.error = e.what();
    return r;
  }
  r.seconds = seconds_since(start);

  bool finite = true;
  for (std::size_t i = 0; i < c.size(); ++i) {
    if (!std::isfinite(c[i])) finite = false;
    r.max_abs_error = std::max(r.max_abs_error, std::abs(static_cast<double>(c[i]) - ref[i]));
  }
  // NaN never compares greater, so a non-finite output must fail explicitly.
  r.passed = finite && r.max_abs_error <= r.tolerance && r.queue_passed;
  if (!finite) r.max_abs_error = INFINITY;
  return r;
}

}  // namespace vgpu::probe
