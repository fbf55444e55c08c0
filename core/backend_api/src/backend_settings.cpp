// SPDX-License-Identifier: Apache-2.0
// core/backend_api/src/backend_settings.cpp — the settings of code that has no Runtime of its own, and
// the members of DeviceImpl that read settings (backend_settings.hpp cannot be included there).
#include "vgpu/backend/backend_settings.hpp"

#include "vgpu/backend/device_impl.hpp"

namespace vgpu {

std::shared_ptr<const BackendSettings> BackendSettings::process() {
  static const std::shared_ptr<const BackendSettings> settings = [] {
    auto s = std::make_shared<BackendSettings>();
    s->config = vgpu::config();
    // The process-wide store is never destroyed (cache::DiskStore::global()): share it, never delete it.
    s->store = std::shared_ptr<cache::DiskStore>(&cache::DiskStore::global(), [](cache::DiskStore*) {});
    return s;
  }();
  return settings;
}

DeviceImpl::DeviceImpl(std::shared_ptr<const BackendSettings> settings)
    : settings_(settings ? std::move(settings) : BackendSettings::process()),
      timeout_ms_(settings_->config.timeout.count()) {}

cache::DiskStore& DeviceImpl::l2_store() const noexcept { return *settings_->store; }

}  // namespace vgpu
