// SPDX-License-Identifier: Apache-2.0
// tests/conformance/devices_test.cpp — the suite must exercise at least one device (an empty
// device list would make every other case pass vacuously), and each device must describe
// itself sanely.
#include "support/catch.hpp"

#include <algorithm>
#include <cstring>

#include "conformance/conformance.hpp"
#include "support/numerics.hpp"
#include "support/plan_runner.hpp"

namespace vgpu_test {

TEST_CASE("at least one device is exercised", "[devices]") {
  const auto devices = devices_under_test();
  INFO("VGPU_TEST_BACKENDS=" << (std::getenv("VGPU_TEST_BACKENDS") ? std::getenv("VGPU_TEST_BACKENDS") : "(unset)"));
  REQUIRE(!devices.empty());
  for (vgpu::Device device : devices) {
    INFO(device.info().id());
    const auto a = random_floats(17, 17), b = random_floats(17, 18);
    HostTensors args{a, b, std::vector<float>(17, kNaN)};
    run_plan(device, vgpu::ops::add(device.info(), 17), args, Path::persistent);
    for (int i = 0; i < 17; ++i) CHECK(args[2][i] == a[i] + b[i]);
    note_exercised(device);
  }
  CHECK(exercised_devices().size() >= devices.size());
}

TEST_CASE("every device under test describes itself", "[devices]") {
  for (vgpu::Device device : devices_under_test()) {
    const vgpu::DeviceInfo& info = device.info();
    INFO(info.id());
    CHECK(!info.name.empty());
    CHECK(info.id() == std::string(vgpu::to_string(info.backend)) + ":" + std::to_string(info.index));
    CHECK(info.fingerprint.hash != 0);
    CHECK(info.fingerprint.hex().size() == 16);
    CHECK_THAT(info.fingerprint.text, Catch::Matchers::ContainsSubstring("vgpu_cache_format="));
    for (int d = 0; d < 3; ++d) {
      CHECK(info.limits.max_workgroup_size[d] >= 1);
      CHECK(info.limits.max_workgroup_count[d] >= 1);
    }
    CHECK(info.limits.max_workgroup_invocations >= 1);
    CHECK(info.limits.max_bindings >= 4);  // every built-in needs up to 3 slots
    if (info.backend == vgpu::BackendKind::cpu) CHECK(info.type == vgpu::DeviceType::cpu);
    // Opening the same device again through the runtime returns the same shared device.
    CHECK(vgpu::Runtime::global().open(info.id()) == device);
  }
}

}  // namespace vgpu_test
