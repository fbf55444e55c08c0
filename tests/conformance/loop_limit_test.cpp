// SPDX-License-Identifier: Apache-2.0
// tests/conformance/loop_limit_test.cpp — the built-in ops past a driver's loop limit, on every
// device under test. Mesa's llvmpipe and lavapipe stop an invocation's loops after 65 535
// iterations of them all together (DeviceLimits::max_loop_iterations), silently, so a kernel
// that walks a long K, a long row or many blocks in one invocation computes a wrong result
// there. Sizes are just past what one invocation could walk: small enough for CI, where
// lavapipe and llvmpipe are slow. Where the answer is exact (sums of ones), it is compared
// exactly. The plans are also checked against the device limit without a device: each loop's
// iterations stay under it, or the plan is refused with a Fix.
#include "support/catch.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>

#include "conformance/conformance.hpp"
#include "conformance/junit_report.hpp"
#include "support/numerics.hpp"
#include "support/plan_runner.hpp"
#include "support/tuned_plan.hpp"
#include "vgpu/kernels/gpu_tuning.hpp"
#include "vgpu/kernels/kernel_abi.hpp"

namespace vgpu_test {
namespace {

constexpr std::array<Path, 2> kPaths{Path::persistent, Path::raw};

// Past 65 535 twice over, and not a multiple of any tile or slice length.
constexpr std::uint32_t kLongK = 2 * 65536 + 7;

bool runs_glsl(const vgpu::Device& device) {
  return device.info().backend == vgpu::BackendKind::vulkan || device.info().backend == vgpu::BackendKind::opengl;
}

// ones(m, k) · ones(k, n) on device through path (tiling: forced GLSL variant, empty: the
// tuner's): every element of C must be exactly k (sums of ones are exact in float below 2^24).
void check_ones_product(vgpu::Device& device, std::uint32_t m, std::uint32_t k, std::uint32_t n, Path path,
                        const std::string& tiling = {}) {
  INFO(device.info().id() << " ones(" << m << "x" << k << ") · ones(" << k << "x" << n << ") via " << to_string(path)
                          << (tiling.empty() ? "" : " tiling " + tiling));
  const vgpu::DeviceInfo& info = device.info();
  HostTensors args{std::vector<float>(std::size_t{m} * k, 1.0f), std::vector<float>(std::size_t{k} * n, 1.0f),
                   std::vector<float>(std::size_t{m} * n, kNaN)};
  run_plan(device,
           tiling.empty() ? vgpu::ops::matmul(info, m, k, n)
                          : matmul_with(vgpu::kernels::gpu_builtin_tuner(tiling), info, m, k, n),
           args, path);
  std::size_t wrong = 0;
  for (float v : args[2])
    if (v != static_cast<float>(k) && wrong++ < 3) UNSCOPED_INFO("an element of C is " << v);
  CHECK(wrong == 0);
  note_exercised(device);
}

// A DeviceInfo like device's with a loop limit of its own (a lower limit than the driver's is
// always safe to plan for): the long-loop plans then run at sizes CI can afford.
vgpu::DeviceInfo with_loop_limit(const vgpu::Device& device, std::uint32_t limit) {
  vgpu::DeviceInfo info = device.info();
  info.limits.max_loop_iterations = limit;
  return info;
}

}  // namespace

TEST_CASE("loop limits: matmul with K past the loop limit gives exactly K", "[matmul][loops]") {
  for (vgpu::Device device : devices_under_test()) {
    // (Each run costs ~0.8 s on lavapipe, so only the reported shape takes both paths.)
    for (Path path : kPaths) check_ones_product(device, 1, kLongK, 1, path);
    check_ones_product(device, 3, kLongK, 5, Path::raw);
    // Every GLSL variant, the naive one included (one loop over all of K per invocation).
    if (runs_glsl(device))
      for (const vgpu::kernels::GlslMatmulTiling& t : vgpu::kernels::glsl_matmul_tilings())
        if (t.fits(device.info())) check_ones_product(device, 2, kLongK, 3, Path::raw, t.name());
    // The reported case, as users write it: the drop-in Cache on this device.
    INFO(device.info().id() << " vgpu::Cache");
    vgpu::Cache cache(device);
    const std::vector<float> a(kLongK, 1.0f), b(kLongK, 1.0f);
    float c = kNaN;
    cache.matmul(a.data(), b.data(), &c, 1, kLongK, 1);
    CHECK(c == static_cast<float>(kLongK));
  }
}

TEST_CASE("loop limits: matmul plans keep every loop under the device's limit", "[matmul][loops]") {
  // No device: plans for a lavapipe-like device, at the real limit and at a small one.
  vgpu::DeviceInfo soft;
  soft.backend = vgpu::BackendKind::vulkan;
  soft.type = vgpu::DeviceType::software;
  soft.compute_units = 2;
  soft.limits.max_shared_memory_bytes = 32768;
  for (std::uint32_t limit : {65535u, 2000u}) {
    soft.limits.max_loop_iterations = limit;
    const std::uint64_t budget = vgpu::kernels::loop_budget(soft);
    CHECK(budget < limit);
    for (const vgpu::kernels::GlslMatmulTiling& t : vgpu::kernels::glsl_matmul_tilings()) {
      if (!t.fits(soft)) continue;
      const auto forced = vgpu::kernels::gpu_builtin_tuner(t.name());
      // The most K one invocation walks fits the budget, and 16 more would not.
      const std::uint64_t slice_max = t.max_k_slice(budget);
      REQUIRE(slice_max >= 16);
      const std::uint64_t per_k = t.naive ? 1 : t.bk;
      CHECK(t.loops_fixed() + slice_max / per_k * t.loops_per_step() <= budget);
      CHECK(t.loops_fixed() + (slice_max + 16) / per_k * t.loops_per_step() > budget);
      for (std::uint32_t k : {16u, 4097u, kLongK, 1u << 22}) {
        INFO("limit " << limit << " tiling " << t.name() << " K " << k);
        vgpu::KernelPlan plan;
        try {
          plan = matmul_with(forced, soft, 7, k, 9);
        } catch (const vgpu::Error& e) {
          // Only a small limit may run out of slices (the sum's loop walks them); it says so.
          CHECK(limit == 2000u);
          CHECK(e.category() == vgpu::ErrorCategory::invalid_argument);
          CHECK_THAT(std::string(e.what()), Catch::Matchers::ContainsSubstring("loop"));
          continue;
        }
        const auto q = plan.steps[0].params.as<vgpu::kernels::MatmulParams>();
        const std::uint64_t slice = q.pad == 0 ? k : q.pad;
        CHECK(slice <= slice_max);
        CHECK(std::uint64_t{plan.steps[0].groups.z} * slice >= k);     // the slices cover K ...
        CHECK(std::uint64_t{plan.steps[0].groups.z - 1} * slice < k);  // ... each holding some
        if (plan.steps.size() == 2) CHECK(plan.steps[1].params.as<vgpu::kernels::MatmulParams>().n + 1 <= budget);
      }
    }
  }
  // Where the slices would need more workgroups along z than the device launches, the plan
  // says so instead of walking K past the limit.
  soft.limits.max_loop_iterations = 2000;
  soft.limits.max_workgroup_count = {65535, 65535, 4};
  try {
    (void)vgpu::ops::matmul(soft, 1, 1u << 22, 1);
    FAIL("a plan whose K slices exceed the loop limit was made");
  } catch (const vgpu::Error& e) {
    CHECK(e.category() == vgpu::ErrorCategory::invalid_argument);
    CHECK_THAT(std::string(e.what()), Catch::Matchers::ContainsSubstring("max_loop_iterations"));
    CHECK_THAT(std::string(e.what()), Catch::Matchers::ContainsSubstring("Fix:"));
  }
  // Without a limit nothing changes: one slice unless the rule splits K for speed.
  soft.limits.max_loop_iterations = 0;
  soft.limits.max_workgroup_count = {65535, 65535, 65535};
  CHECK(vgpu::ops::matmul(soft, 7, 4000, 9).steps.size() == 1);
}

TEST_CASE("loop limits: reduce_sum far past the loop limit sums exactly", "[reduce][loops]") {
  // 65 535·17 + 3 ones: a pass that walked its inputs in one loop per invocation would stop early.
  constexpr std::size_t n = 65535ull * 17 + 3;
  for (vgpu::Device device : devices_under_test())
    for (Path path : kPaths) {
      INFO(device.info().id() << " reduce_sum of " << n << " ones via " << to_string(path));
      HostTensors args{std::vector<float>(n, 1.0f), {kNaN}};
      run_plan(device, vgpu::ops::reduce_sum(device.info(), n), args, path);
      CHECK(args[1][0] == static_cast<float>(n));  // every partial sum is a small integer: exact
      note_exercised(device);
    }
}

TEST_CASE("loop limits: softmax_rows with rows past the loop limit", "[softmax][loops]") {
  // One workgroup per row walks a row 256 columns at a time in three passes: past
  // 3·cols/256 ≈ 65 535, i.e. from ~5.6 M columns, the row no longer fits one workgroup.
  // The row is built so that the exact answer is known: its first half is -100 (exp(-100) is
  // below float's resolution next to 1), its second half 0, the row's max. So the sum of
  // exponentials is exactly the number of zeros z (integers below 2^24 add exactly), and each
  // zero's output is exactly 1/z rounded; the others are 0 or a denormal. A max pass cut short
  // misses the zeros (exp(100) overflows), a sum pass cut short gives another z, and a write
  // pass cut short leaves NaN (Path::raw poisons the output).
  constexpr std::uint32_t cols = 5600000 + 13;
  constexpr std::uint32_t zeros = cols - cols / 2;
  std::vector<float> x(cols, 0.0f);
  std::fill(x.begin(), x.begin() + cols / 2, -100.0f);
  const float want = 1.0f / static_cast<float>(zeros);
  for (vgpu::Device device : devices_under_test()) {
    INFO(device.info().id() << " softmax_rows 1x" << cols);
    HostTensors args{x, std::vector<float>(cols, kNaN)};
    run_plan(device, vgpu::ops::softmax_rows(device.info(), 1, cols), args, Path::raw);
    std::size_t wrong = 0;
    for (std::uint32_t j = 0; j < cols; ++j) {
      const float v = args[1][j];
      const bool ok = j < cols / 2 ? (v >= 0.0f && v <= 1e-37f) : v == want;
      if (!ok && wrong++ < 3) UNSCOPED_INFO("out[" << j << "] = " << v << ", want " << (j < cols / 2 ? 0.0f : want));
    }
    CHECK(wrong == 0);
    note_exercised(device);
  }
}

TEST_CASE("loop limits: softmax_rows split over groups at small limits, awkward shapes", "[softmax][loops]") {
  // The split path at sizes CI affords: a lowered limit makes short rows too long for one group.
  struct Shape2 {
    std::uint32_t rows, cols;
  };
  for (vgpu::Device device : devices_under_test()) {
    if (!runs_glsl(device)) {  // the split kernel is GLSL; only Mesa's devices need it
      skip_on(device, "the split softmax kernel is GLSL, which this device does not run");
      continue;
    }
    // 60: rows from ~3 300 columns split into chunks of 1 280 (past 256 chunks at 330 001);
    // 400: rows from ~33 000 columns split into chunks of 16 384.
    for (std::uint32_t limit : {60u, 400u})
      for (Shape2 s :
           {Shape2{1, 1}, Shape2{3, 1000}, Shape2{2, 4097}, Shape2{5, 70001}, Shape2{300, 257}, Shape2{1, 330001}})
        for (Path path : kPaths) {
          INFO(device.info().id() << " limit " << limit << " softmax_rows " << s.rows << "x" << s.cols << " via "
                                  << to_string(path));
          const auto x = random_floats(std::size_t{s.rows} * s.cols, s.rows * 7919ull + s.cols, -30.0f, 30.0f);
          HostTensors args{x, std::vector<float>(x.size(), kNaN)};
          run_plan(device, vgpu::ops::softmax_rows(with_loop_limit(device, limit), s.rows, s.cols), args, path);
          const Comparison c = compare(args[1], softmax_reference(x, s.rows, s.cols));
          INFO(c.describe());
          CHECK(c.ok());
          CHECK(worst_row_sum_error(args[1], s.rows, s.cols) <= 1e-5);
          note_exercised(device);
        }
    // A limit too small for even one pass per group is refused with a Fix, never run wrong.
    try {
      (void)vgpu::ops::softmax_rows(with_loop_limit(device, 20), 2, 100000);
      FAIL("a softmax plan past a loop limit of 20 was made");
    } catch (const vgpu::Error& e) {
      CHECK(e.category() == vgpu::ErrorCategory::invalid_argument);
      CHECK_THAT(std::string(e.what()), Catch::Matchers::ContainsSubstring("Fix:"));
    }
  }
}

}  // namespace vgpu_test
