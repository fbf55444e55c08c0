// SPDX-License-Identifier: Apache-2.0
// tests/support/validation_watch.hpp — test programs fail on any Vulkan validation message:
// under VGPU_VULKAN_VALIDATION=1 (ctest sets it for the Vulkan tests) the backend logs each one
// as an error line starting with "Vulkan validation:".
#pragma once

namespace vgpu_test {

/// Routes vgpu's log through a sink that records validation lines and prints every line to
/// stderr as vgpu would; reinstalled at each test case (a test's own sink replaces it).
void watch_validation();

/// Returns result, or 1 after printing them when validation messages were logged.
int validation_verdict(int result);

}  // namespace vgpu_test
