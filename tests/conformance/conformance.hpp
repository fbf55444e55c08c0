// SPDX-License-Identifier: Apache-2.0
// tests/conformance/conformance.hpp — what every conformance test case shares: the devices
// under test (every device the registry finds, filtered by VGPU_TEST_BACKENDS) and a record of
// which devices were exercised.
#pragma once

#include <string>
#include <vector>

#include "vgpu/vgpu.hpp"

namespace vgpu_test {

/// Returns the devices to test: Runtime::global().devices() whose backend is listed in
/// VGPU_TEST_BACKENDS (a comma list such as "vulkan,cpu"; unset or empty means all), opened.
std::vector<vgpu::Device> devices_under_test();

/// Records that a test ran real work on device (main() prints the tally).
void note_exercised(const vgpu::Device& device);

/// Returns the ids of the devices exercised so far.
std::vector<std::string> exercised_devices();

}  // namespace vgpu_test
