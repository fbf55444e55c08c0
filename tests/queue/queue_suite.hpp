// SPDX-License-Identifier: Apache-2.0
// tests/queue/queue_suite.hpp — what the queue suite's test cases share: the devices under test
// (VGPU_TEST_BACKENDS picks the backend kind, one ctest run per kind: queue.cpu, queue.vulkan, ...).
#pragma once

#include <vector>

#include "vgpu/vgpu.hpp"

namespace vgpu_test {

/// Returns the devices of the backend kinds VGPU_TEST_BACKENDS names (all, when unset).
std::vector<vgpu::Device> queue_devices();

}  // namespace vgpu_test
