// SPDX-License-Identifier: Apache-2.0
// tests/runtime/lazy_backends_test.cpp — lazy backends (issue 17): a runtime asked only for one device
// probes only that device's backend, so a process that uses cpu:0 maps none of libvulkan,
// libEGL or libcuda; enumeration still probes and lists every backend.
//
// In process, a spy backend counts how often it is probed. Across processes,
// vgpu-test-lazy-child reports from /proc/self/maps which vendor libraries it mapped.
#include <atomic>
#include <memory>
#include <string>

#include "support/cache_fixtures.hpp"
#include "support/catch.hpp"
#include "support/expect_error.hpp"
#include "support/helper_path.hpp"
#include "support/test_backend.hpp"
#include "vgpu/backend/registry.hpp"
#include "vgpu/vgpu.hpp"

#ifndef VGPU_LAZY_CHILD
#error "VGPU_LAZY_CHILD (path of vgpu-test-lazy-child) must be defined by the build"
#endif

namespace {

/// A backend with no device that counts its probes (status() and enumerate() calls), standing
/// for a GPU backend whose probing would load a vendor library.
class SpyBackend final : public vgpu::ComputeBackend {
 public:
  inline static const vgpu::BackendKind kKind = vgpu::BackendKind::named("spy");
  std::atomic<int> probes{0};

  vgpu::BackendKind kind() const noexcept override { return kKind; }
  std::string name() const override { return "spy"; }
  vgpu::BackendStatus status() override {
    ++probes;
    return {kKind, true, false, "the spy has no device"};
  }
  std::vector<vgpu::DeviceInfo> enumerate() override {
    ++probes;
    return {};
  }
  std::unique_ptr<vgpu::DeviceImpl> open(std::uint32_t) override {
    vgpu::fail(vgpu::ErrorCategory::unavailable, "the spy has no device.", "do not open it.");
  }
};

/// Runtime options over the spy (first, as a GPU backend would be) and the CPU backend.
vgpu::RuntimeOptions spy_and_cpu(const std::shared_ptr<SpyBackend>& spy, std::string forced) {
  vgpu::RuntimeOptions o;
  o.forced_device = std::move(forced);
  o.backends = {spy, std::shared_ptr<vgpu::ComputeBackend>(vgpu::make_cpu_backend())};
  return o;
}

/// Runs lazy-child in mode with extra_env; the child's own VGPU_DEVICE and VGPU_BACKEND are cleared first.
vgpu::test::ChildRun run_lazy_child(const std::string& mode, const std::string& extra_env) {
  return vgpu::test::run_child_command("env -u VGPU_DEVICE -u VGPU_BACKEND " + extra_env + " " +
                                       vgpu::test::quoted(vgpu::test::helper_path(VGPU_LAZY_CHILD)) + " " + mode +
                                       " 2>&1");
}

}  // namespace

TEST_CASE("a forced device probes only its own backend", "[lazy]") {
  auto spy = std::make_shared<SpyBackend>();
  vgpu::Runtime runtime(spy_and_cpu(spy, "cpu:0"));
  vgpu::Cache cache(runtime.default_device());
  const vgpu::Matrix c = cache.matmul(vgpu::Matrix(4, 4, 1.0f), vgpu::Matrix(4, 4, 2.0f));
  CHECK(c.data.at(0) == 8.0f);
  CHECK(runtime.select("matmul", {4, 4, 4}).info().id() == "cpu:0");
  CHECK(runtime.open("cpu").info().id() == "cpu:0");
  CHECK(spy->probes == 0);
  // Enumeration probes everything, once.
  const auto devices = runtime.devices();
  REQUIRE(devices.size() == 1);
  CHECK(devices[0].id() == "cpu:0");
  const int after_enumeration = spy->probes;
  CHECK(after_enumeration >= 1);
  const auto statuses = runtime.backends();
  REQUIRE(statuses.size() == 2);
  CHECK(statuses[0].kind == SpyBackend::kKind);
  CHECK(!statuses[0].available);
  CHECK(statuses[0].reason == "the spy has no device");
  CHECK(statuses[1].available);
  runtime.open("cpu:0");
  CHECK(spy->probes == after_enumeration);
}

TEST_CASE("opening a device that is not there lists every device in its Fix hint", "[lazy]") {
  auto spy = std::make_shared<SpyBackend>();
  vgpu::Runtime runtime(spy_and_cpu(spy, ""));
  REQUIRE_VGPU_ERROR(unavailable, "pick one of the available devices: cpu:0", runtime.open("cpu:7"));
  REQUIRE_VGPU_ERROR(unavailable, "spy: the spy has no device", runtime.open("spy:0"));
}

TEST_CASE("a persisted choice is followed probing only the chosen device's backend", "[lazy]") {
  vgpu::test::TempDir dir("lazy-persisted-");
  const std::string salt = vgpu::test::unique_name("lazy-persisted");
  // test:1 is the fastest by far, so every calibration chooses it.
  const auto knobs = [&] { return vgpu_test::test_devices({3000, 0}, salt); };
  const auto options = [&](const std::shared_ptr<SpyBackend>& spy) {
    vgpu::RuntimeOptions o = vgpu_test::test_runtime_options(knobs());
    o.backends.insert(o.backends.begin(), spy);
    o.cache_dir = dir.path;
    return o;
  };
  {
    auto spy = std::make_shared<SpyBackend>();
    vgpu::Runtime first(options(spy));
    const vgpu::Selection s = first.explain("axpy", {1000});
    INFO(s.describe());
    REQUIRE(s.source == vgpu::SelectionSource::calibrated);
    REQUIRE(s.device == "test:1");
    CHECK(spy->probes >= 1);  // calibration enumerates every backend
  }
  {
    auto spy = std::make_shared<SpyBackend>();
    vgpu::Runtime second(options(spy));
    const vgpu::Selection s = second.explain("axpy", {1000});
    INFO(s.describe());
    CHECK(s.source == vgpu::SelectionSource::persisted);
    CHECK(s.device == "test:1");
    CHECK(second.select("axpy", {1000}).info().id() == "test:1");
    CHECK(spy->probes == 0);
  }
  {
    // The chosen backend's devices changed (another fingerprint): the pointer is not followed,
    // everything is enumerated and the class calibrated again.
    auto spy = std::make_shared<SpyBackend>();
    vgpu::RuntimeOptions o = vgpu_test::test_runtime_options(vgpu_test::test_devices({3000, 0}, salt + "-changed"));
    o.backends.insert(o.backends.begin(), spy);
    o.cache_dir = dir.path;
    vgpu::Runtime third(o);
    const vgpu::Selection s = third.explain("axpy", {1000});
    INFO(s.describe());
    CHECK(s.source == vgpu::SelectionSource::calibrated);
    CHECK(spy->probes >= 1);
  }
}

TEST_CASE("a process whose device is cpu:0 maps no GPU runtime", "[lazy]") {
  for (const char* how : {"matmul VGPU_DEVICE=cpu:0", "options"}) {
    const std::string mode = std::string(how).substr(0, std::string(how).find(' '));
    const std::string env = std::string(how).find(' ') == std::string::npos ? "" : std::string(how).substr(mode.size());
    const vgpu::test::ChildRun run = run_lazy_child(mode, env);
    INFO(how << ":\n" << run.output);
    REQUIRE(run.ok());
    CHECK(run.text("device") == "cpu:0");
    CHECK(run.text("libvulkan") == "0");
    CHECK(run.text("libEGL") == "0");
    CHECK(run.text("libcuda") == "0");
  }
}

TEST_CASE("a process whose persisted choice is cpu:0 maps no GPU runtime", "[lazy]") {
  vgpu::test::TempDir dir("lazy-select-");
  const std::string env = "VGPU_CACHE_DIR=" + vgpu::test::quoted(dir.path.string());
  const vgpu::test::ChildRun first = run_lazy_child("select", env);
  INFO("first:\n" << first.output);
  REQUIRE(first.ok());
  if (first.text("device") != "cpu:0") {
    WARN("SKIPPED: matmul 16x16x16 chose " << first.text("device") << " here, not cpu:0");
    return;
  }
  const vgpu::test::ChildRun second = run_lazy_child("select", env);
  INFO("second:\n" << second.output);
  REQUIRE(second.ok());
  CHECK(second.text("source") == "persisted");
  CHECK(second.text("device") == "cpu:0");
  CHECK(second.text("libvulkan") == "0");
  CHECK(second.text("libEGL") == "0");
  CHECK(second.text("libcuda") == "0");
}

TEST_CASE("enumerating maps every available backend's runtime", "[lazy]") {
  const vgpu::test::ChildRun run = run_lazy_child("devices", "");
  INFO(run.output);
  REQUIRE(run.ok());
  // Each library is checked where its backend works here; elsewhere the child printed why not.
  const struct {
    const char* backend;
    const char* library;
  } pairs[] = {{"cuda", "libcuda"}, {"vulkan", "libvulkan"}, {"opengl", "libEGL"}};
  for (const auto& p : pairs) {
    if (run.text(p.backend) != "1") {
      WARN("SKIPPED " << p.library << " check: " << p.backend << " is not available here (see the output)");
      continue;
    }
    INFO(p.backend);
    CHECK(run.text(p.library) == "1");
  }
}
