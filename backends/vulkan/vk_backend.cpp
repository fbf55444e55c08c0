// SPDX-License-Identifier: Apache-2.0
// backends/vulkan/vk_backend.cpp — the Vulkan ComputeBackend: status, enumeration, open.
#include <mutex>

#include "vgpu/backend/registry.hpp"
#include "vgpu/kernels/gpu_tuning.hpp"
#include "vgpu/error.hpp"
#include "vgpu/shader_toolchain.hpp"
#include "vk_device.hpp"

namespace vgpu {
namespace vulkan {
namespace {

/// The Vulkan backend. The instance is created on first status()/enumerate() and shared with
/// every device. Thread-safety: all members are safe to call concurrently.
class VulkanBackend final : public ComputeBackend {
 public:
  /// Opens its devices with settings (one runtime's).
  explicit VulkanBackend(std::shared_ptr<const BackendSettings> settings) : settings_(std::move(settings)) {}

  BackendKind kind() const noexcept override { return BackendKind::vulkan; }
  /// Returns the rule by which it runs the built-in ops (its registry entry names the same).
  std::shared_ptr<const OpTuner> op_tuner() const override { return kernels::configured_gpu_builtin_tuner(); }

  BackendStatus status() override {
    BackendStatus st;
    st.kind = BackendKind::vulkan;
    st.compiled_in = true;
    st.available = instance() != nullptr;
    st.reason = st.available ? "" : reason_;
    return st;
  }

  std::vector<DeviceInfo> enumerate() override {
    std::vector<DeviceInfo> out;
    if (auto inst = instance())
      for (const auto& pd : inst->devices()) out.push_back(pd.info);
    return out;
  }

  std::unique_ptr<DeviceImpl> open(std::uint32_t index) override {
    auto inst = instance();
    if (!inst)
      fail(ErrorCategory::unavailable, "Vulkan is unavailable: " + reason_ + ".", "run vgpu-probe for details.");
    if (index >= inst->devices().size())
      fail(ErrorCategory::invalid_argument, "there is no Vulkan device " + std::to_string(index) + ".",
           "use an index from vgpu-probe's device list.");
    return std::make_unique<VulkanDevice>(inst, inst->devices()[index], settings_);
  }

 private:
  std::shared_ptr<Instance> instance() {
    std::call_once(once_, [this] {
      // Every pipeline is reflected, and every L2 SPIR-V payload validated, by the toolchain.
      if (!toolchain::shader_toolchain())
        reason_ = toolchain::shader_toolchain_problem();
      else
        instance_ = Instance::create(&reason_);
    });
    return instance_;
  }

  std::shared_ptr<const BackendSettings> settings_;
  std::once_flag once_;
  std::shared_ptr<Instance> instance_;
  std::string reason_;
};

}  // namespace
}  // namespace vulkan

std::unique_ptr<ComputeBackend> make_vulkan_backend(std::shared_ptr<const BackendSettings> settings) {
  return std::make_unique<vulkan::VulkanBackend>(std::move(settings));
}

}  // namespace vgpu
