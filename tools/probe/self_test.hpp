// SPDX-License-Identifier: Apache-2.0
// tools/probe/self_test.hpp — a quick per-device correctness check: one small matmul against
// a double-precision reference, and the design's add-one queue (kQueueSelfTestItems items that
// must run in one launch, docs/queue.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "vgpu/device_info.hpp"
#include "vgpu/runtime.hpp"

namespace vgpu::probe {

/// Size of the self-test matmul (M = K = N).
inline constexpr std::uint32_t kSelfTestSize = 64;
/// Relative tolerance: pass when max |C - ref| <= kSelfTestRelTol * max(1, max |ref|).
inline constexpr double kSelfTestRelTol = 1e-3;
/// Seed of the self-test's random inputs, fixed so every run checks the same numbers.
inline constexpr std::uint32_t kSelfTestSeed = 20240611;

/// Items of the self-test's add-one queue run.
inline constexpr std::uint32_t kQueueSelfTestItems = 16;

/// Outcome of one device's self-test. A plain value.
struct SelfTestResult {
  bool passed = false;
  double max_abs_error = 0.0;        ///< max |C - ref| over all elements
  double tolerance = 0.0;            ///< the bound max_abs_error had to stay under
  double build_seconds = 0.0;        ///< opening the device and building the persistent kernel
  double run_seconds = 0.0;          ///< one call: upload, dispatch, read back
  double seconds = 0.0;              ///< build + run
  std::string error;                 ///< a vgpu::Error's message when the test could not run
  bool queue_passed = false;         ///< the add-one queue gave every item's value + 1, by id, in one launch
  std::uint64_t queue_launches = 0;  ///< launches the queue run made (1 expected)
  std::string queue_error;           ///< a vgpu::Error's message when the queue run could not run
};

/// Returns a one-line description of the self-test (size, inputs, reference).
std::string self_test_description();
/// Returns the pass criterion as one line ("PASS when max|C-ref| <= ...").
std::string self_test_criterion();

/// Opens device through runtime and checks a kSelfTestSize³ float matmul against a double
/// reference, then runs the add-one queue of kQueueSelfTestItems items; a vgpu::Error is
/// caught and reported as a failure with its message. passed needs both.
SelfTestResult run_self_test(Runtime& runtime, const DeviceInfo& device);

}  // namespace vgpu::probe
