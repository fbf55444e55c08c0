// SPDX-License-Identifier: Apache-2.0
// tests/backends/vulkan_labels_test.cpp — vgpu's Vulkan objects carry debug names (VK_EXT_debug_utils)
// that the validation layer's messages, delivered through vgpu's debug-utils messenger, show:
// a kernel's pipeline and shader module are named after KernelSource::name (seen in the layer's
// debug printf report of a dispatch), a buffer is named from its creation on (seen in the best
// practices message about binding its memory). Runs with VGPU_VULKAN_VALIDATION=1 and the layer
// settings in tests/data/vk_layer_settings_labels.txt (VK_LAYER_SETTINGS_PATH); exits 77 with the
// reason when there is no Vulkan device or no validation layer.
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <string>
#include <vector>

#include "vgpu/vgpu.hpp"

namespace {

std::mutex g_mutex;
std::vector<std::string> g_lines;  // every log line at info and above

bool any_line(const std::string& a, const std::string& b = "", const std::string& c = "") {
  std::lock_guard lock(g_mutex);
  for (const std::string& l : g_lines)
    if (l.find(a) != std::string::npos && l.find(b) != std::string::npos && l.find(c) != std::string::npos) return true;
  return false;
}

int skipped(const std::string& why) {
  std::cout << "SKIPPED vulkan.debug_labels: " << why << "\n";
  return 77;
}

}  // namespace

int main() {
  const std::uint64_t token = vgpu::set_log_sink(
      [](vgpu::LogLevel, std::string_view line) {
        std::lock_guard lock(g_mutex);
        g_lines.emplace_back(line);
      },
      vgpu::LogLevel::info);
  int failures = 0;
  auto expect = [&](bool ok, const std::string& what) {
    std::cout << (ok ? "ok      " : "FAILED  ") << what << "\n";
    if (!ok) ++failures;
  };
  try {
    vgpu::Runtime& rt = vgpu::Runtime::global();
    bool have = false;
    for (const auto& info : rt.devices()) have = have || info.id() == "vulkan:0";
    if (!have) return skipped("no Vulkan device here");
    vgpu::Device device = rt.open("vulkan:0");
    if (any_line("validation layer VK_LAYER_KHRONOS_validation is not installed"))
      return skipped("the Vulkan validation layer is not installed (Debian: vulkan-validationlayers)");

    vgpu::KernelSource source;
    source.name = "labels_test_kernel";
    source.add(vgpu::DialectSource{std::string(vgpu::dialect::glsl_shader), R"(#version 450
#extension GL_EXT_debug_printf : enable
layout(local_size_x = 1) in;
layout(std430, binding = 0) buffer Data { float v[]; };
void main() {
  v[0] = 42.0;
  debugPrintfEXT("labels test value %f", v[0]);
}
)",
                                   "main"});
    const vgpu::Kernel kernel = device.compile(source);
    vgpu::Buffer buffer = device.create_buffer(1024);
    device.set_label(buffer, "labels_test_buffer");
    device.dispatch(kernel, device.bind(kernel, {{0, buffer}}), {}, {1, 1, 1});
    device.synchronize();
    float value = 0;
    device.read(buffer, &value, 4);
    expect(value == 42.0f, "the kernel ran (v[0] = " + std::to_string(value) + ")");
  } catch (const vgpu::Error& e) {
    std::cout << "FAILED  " << e.what() << "\n";
    ++failures;
  }
  vgpu::restore_log_sink(token);
  if (!any_line("Vulkan shader printf:") && !any_line("Vulkan validation:"))
    return skipped("the validation layer reported nothing: it did not load (VK_LAYER_PATH, VGPU_VULKAN_VALIDATION)");
  expect(any_line("Vulkan shader printf:", "labels test value 42"), "the shader's printf came through the messenger");
  expect(any_line("Vulkan shader printf:", "Pipeline (labels_test_kernel)"),
         "the dispatch's pipeline is named after the kernel");
  expect(any_line("Vulkan shader printf:", "Shader Module (labels_test_kernel)"),
         "its shader module is named after the kernel");
  expect(any_line("Vulkan validation:", "VkBuffer", "[vgpu buffer (1024 bytes)]"),
         "the buffer is named from its creation on (best practices' message about binding its memory)");
  if (failures) {
    std::lock_guard lock(g_mutex);
    std::cout << "\nlog lines:\n";
    for (const std::string& l : g_lines) std::cout << "  " << l.substr(0, 600) << "\n";
  }
  return failures ? 1 : 0;
}
