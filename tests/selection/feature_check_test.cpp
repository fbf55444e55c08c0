// SPDX-License-Identifier: Apache-2.0
// tests/selection/feature_check_test.cpp — capability truth tests (vgpu/feature_check.hpp): every
// probed feature a real device here advertises passes, the verdicts are stored in L2 and a
// second runtime reads them without probing; a device that advertises a feature and computes it
// wrong gets a "wrong" verdict, one warning, and kernels declaring its capability are refused.
#include <algorithm>
#include <string>
#include <vector>

#include "builtin_plans.hpp"
#include "device_core.hpp"
#include "feature_gate.hpp"
#include "support/cache_fixtures.hpp"
#include "support/catch.hpp"
#include "support/expect_error.hpp"
#include "support/logged_runtime.hpp"
#include "support/test_backend.hpp"
#include "vgpu/feature_check.hpp"
#include "vgpu/vgpu.hpp"

namespace vgpu_test {
namespace {

using Knobs = std::vector<std::shared_ptr<TestDeviceKnobs>>;
using Logged = vgpu::test::LoggedRuntime;
using vgpu::test::TempDir;

bool advertises(const vgpu::DeviceInfo& info, const std::string& feature) {
  return std::find(info.features.begin(), info.features.end(), feature) != info.features.end();
}

}  // namespace

TEST_CASE("every probed feature a device here advertises passes its truth test, stored for the next process",
          "[features]") {
  TempDir dir("features-real-");
  std::size_t checked = 0;
  {
    Logged l(vgpu::RuntimeOptions{}, dir.path);
    for (const vgpu::DeviceInfo& info : l.runtime.devices()) {
      vgpu::Device device = l.runtime.open(info.id());
      const std::vector<vgpu::FeatureCheck> checks = vgpu::check_features(device);
      for (const std::string& f : vgpu::probed_features()) {
        const auto it = std::find_if(checks.begin(), checks.end(), [&](const auto& c) { return c.feature == f; });
        CHECK((it != checks.end()) == advertises(info, f));  // exactly the advertised ones are probed
      }
      for (const vgpu::FeatureCheck& c : checks) {
        INFO(info.id() << " " << c.feature << ": " << vgpu::to_string(c.verdict) << " " << c.note);
        CHECK(c.verdict == vgpu::FeatureVerdict::passed);
        CHECK(!c.stored);
        ++checked;
      }
    }
    INFO(l.all());
    CHECK(l.count("truth test") == 0);
  }
  if (checked == 0) {
    WARN("no device here advertises a probed feature (lavapipe does): only the empty result was checked");
    return;
  }
  // A second runtime on the same store: the verdicts come from L2 (memoised per fingerprint in
  // this process too, so the store is checked through the records themselves).
  Logged l2(vgpu::RuntimeOptions{}, dir.path);
  for (const vgpu::DeviceInfo& info : l2.runtime.devices()) {
    vgpu::Device device = l2.runtime.open(info.id());
    for (const vgpu::FeatureCheck& c : vgpu::check_features(device)) CHECK(c.verdict == vgpu::FeatureVerdict::passed);
  }
}

TEST_CASE("a feature a device advertises but computes wrong is refused with one warning, not used", "[features]") {
  Knobs k = test_devices({0, 0}, vgpu::test::unique_name("features-wrong"));
  for (auto& knob : k) knob->features = {"shader_float16", "storage_buffer_16bit"};
  k[0]->wrong_results = true;
  TempDir dir("features-wrong-");
  Logged l(test_runtime_options(k), dir.path);
  vgpu::Device bad = l.runtime.open("test:0"), good = l.runtime.open("test:1");
  const std::vector<vgpu::FeatureCheck> checks = vgpu::check_features(bad);
  REQUIRE(checks.size() == 2);
  for (const vgpu::FeatureCheck& c : checks) {
    INFO(c.feature << ": " << c.note);
    CHECK(c.verdict == vgpu::FeatureVerdict::wrong);
    CHECK_THAT(c.note, Catch::Matchers::ContainsSubstring("differ from the expected"));
  }
  for (const vgpu::FeatureCheck& c : vgpu::check_features(good)) CHECK(c.verdict == vgpu::FeatureVerdict::passed);
  CHECK(l.count("test:0 advertises shader_float16, but vgpu's truth test of it computed wrong results") == 1);
  CHECK(l.count("test:1 advertises") == 0);
  // A kernel declaring the capability of the wrong feature is refused there, and only there.
  vgpu::KernelReflection r;
  r.capabilities = {"Shader", "Float16"};
  REQUIRE_VGPU_ERROR(not_supported, "truth test",
                     vgpu::detail::check_kernel_features(vgpu::detail::DeviceAccess::core(bad), r, "user.k"));
  REQUIRE_VGPU_ERROR(not_supported,
                     "Fix:", vgpu::detail::check_kernel_features(vgpu::detail::DeviceAccess::core(bad), r, "user.k"));
  CHECK_NOTHROW(vgpu::detail::check_kernel_features(vgpu::detail::DeviceAccess::core(good), r, "user.k"));
  r.capabilities = {"Shader", "Int8"};  // not advertised by the test device, so not this check's to refuse
  CHECK_NOTHROW(vgpu::detail::check_kernel_features(vgpu::detail::DeviceAccess::core(bad), r, "user.k"));
  CHECK(l.count("advertises shader_float16") == 1);  // one warning, however often it is asked
}

TEST_CASE("a verdict is kept: asked again, on another runtime and with the device now right, no probe runs",
          "[features]") {
  // (Across processes the verdict comes from the L2 store: tests/checks/probe_cli_test.py
  // feature_checks sees the second vgpu-probe --features report every verdict as stored.)
  Knobs k = test_devices({0}, vgpu::test::unique_name("features-kept"));
  k[0]->features = {"shader_int8"};
  k[0]->wrong_results = true;
  TempDir dir("features-kept-");
  {
    Logged l(test_runtime_options(k), dir.path);
    REQUIRE(vgpu::check_features(l.runtime.open("test:0")).at(0).verdict == vgpu::FeatureVerdict::wrong);
  }
  k[0]->wrong_results = false;
  Logged l(test_runtime_options(k), dir.path);
  vgpu::Device device = l.runtime.open("test:0");
  const std::uint64_t dispatches = k[0]->dispatches;
  const std::vector<vgpu::FeatureCheck> checks = vgpu::check_features(device);
  REQUIRE(checks.size() == 1);
  CHECK(checks[0].verdict == vgpu::FeatureVerdict::wrong);
  CHECK(k[0]->dispatches == dispatches);  // no probe ran
}

TEST_CASE("a matmul variant whose feature failed its truth test is never planned: float32's runs instead",
          "[features]") {
  // A tuner as a backend with cooperative matrices has one: float16 matmuls get a native variant
  // that needs the feature, float32 the plain one.
  struct NativeTuner final : vgpu::OpTuner {
    vgpu::OpTuning tune(const vgpu::OpShape& shape, const vgpu::DeviceInfo&) const override {
      vgpu::OpTuning t;
      t.options.workgroup_size = {16, 16, 1};
      t.per_group_x = t.per_group_y = 16;
      t.variant = "plain";
      if (shape.dtype == vgpu::DType::f16) {
        t.variant = "native";
        t.native_dtype = true;
        t.feature = "cooperative_matrix";
        t.code = vgpu::DialectSource{"glsl", "void main() {}", {}, {}, {}};
      }
      return t;
    }
  };
  const NativeTuner tuner;
  Knobs k = test_devices({0, 0}, vgpu::test::unique_name("features-native"));
  for (auto& knob : k) knob->features = {"cooperative_matrix"};
  k[0]->wrong_results = true;
  TempDir dir("features-native-");
  Logged l(test_runtime_options(k), dir.path);
  vgpu::Device bad = l.runtime.open("test:0"), good = l.runtime.open("test:1");
  auto variant = [&](vgpu::Device& d, vgpu::DType dtype) {
    return vgpu::detail::matmul_tuning(d.info(), &tuner, &vgpu::detail::DeviceAccess::core(d), 64, 64, 64, dtype, false)
        .variant;
  };
  CHECK(variant(good, vgpu::DType::f16) == "native");
  CHECK(variant(bad, vgpu::DType::f16) == "plain");  // between conversions, as on a device without the feature
  CHECK(variant(bad, vgpu::DType::f32) == "plain");
  CHECK(l.count("test:0 advertises cooperative_matrix, but vgpu's truth test of it computed wrong results") == 1);
  // Without the feature advertised at all, the variant is dropped too (the tuner should not offer it).
  Knobs none = test_devices({0}, vgpu::test::unique_name("features-native-none"));
  Logged l2(test_runtime_options(none), dir.path);
  vgpu::Device plain = l2.runtime.open("test:0");
  CHECK(variant(plain, vgpu::DType::f16) == "plain");
}

}  // namespace vgpu_test
