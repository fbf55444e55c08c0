// SPDX-License-Identifier: Apache-2.0
// core/runtime/device/device_catalog.cpp — probing backends lazily and the open-device table.
#include "device_catalog.hpp"

#include <algorithm>

#include "device_core.hpp"
#include "registry.hpp"
#include "vgpu/backend/backend_settings.hpp"
#include "vgpu/backend/compute_backend.hpp"
#include "vgpu/backend/device_impl.hpp"
#include "vgpu/backend/exit_order.hpp"
#include "vgpu/error.hpp"

namespace vgpu::detail {

DeviceCatalog::DeviceCatalog(std::shared_ptr<const BackendSettings> settings,
                             std::vector<std::shared_ptr<ComputeBackend>> backends, std::vector<BackendKind> kinds,
                             std::vector<BackendKind> allowed)
    : settings_(std::move(settings)),
      backends_(std::move(backends)),
      kinds_(std::move(kinds)),
      allowed_(std::move(allowed)),
      probed_(kinds_.size()) {
  for (std::size_t i = 0; i < kinds_.size(); ++i) kind_mutexes_.push_back(std::make_unique<std::mutex>());
  // A backend vgpu does not register brings its rule for the built-in ops: the DeviceInfo forms
  // of vgpu::ops (a user's plan factory calling ops::add(info, n)) find it by the device's kind.
  for (const auto& backend : backends_) remember_op_tuner(*backend);
}

DeviceCatalog::~DeviceCatalog() = default;

bool DeviceCatalog::allowed(BackendKind k) const {
  return allowed_.empty() || std::find(allowed_.begin(), allowed_.end(), k) != allowed_.end();
}

std::size_t DeviceCatalog::kind_index(BackendKind kind) const {
  return static_cast<std::size_t>(std::find(kinds_.begin(), kinds_.end(), kind) - kinds_.begin());
}

std::shared_ptr<ComputeBackend> DeviceCatalog::backend_of(BackendKind kind) const {
  for (const auto& b : backends_)
    if (b->kind() == kind) return b;
  return nullptr;
}

std::string DeviceCatalog::scope() const {
  std::string scope;
  for (BackendKind kind : kinds_)
    if (backend_of(kind) && allowed(kind)) scope += (scope.empty() ? "" : ",") + std::string(to_string(kind));
  return scope;
}

const DeviceCatalog::Probed& DeviceCatalog::probe_kind(std::size_t i) {
  {
    std::lock_guard lock(mutex_);
    if (probed_[i]) return *probed_[i];  // set once, never changed: the reference stays valid
  }
  std::lock_guard probing(*kind_mutexes_[i]);
  {
    std::lock_guard lock(mutex_);
    if (probed_[i]) return *probed_[i];
  }
  const BackendKind kind = kinds_[i];
  const std::shared_ptr<ComputeBackend> backend = backend_of(kind);
  Probed p;
  BackendStatus& st = p.status;
  st.kind = kind;
  if (!backend) {
    st.reason = std::string("not compiled in (") + build_option(kind) + "=OFF at build time)";
  } else if (!allowed(kind)) {
    st.compiled_in = true;
    st.reason = "excluded by VGPU_BACKEND";
  } else {
    try {
      st = backend->status();
      st.compiled_in = true;
      if (st.available) {
        p.devices = backend->enumerate();
        if (p.devices.empty()) {
          st.available = false;
          st.reason = "no usable device found";
        }
      }
    } catch (const Error& e) {
      st.available = false;
      st.reason = e.what();
      p.devices.clear();
    }
    // Probing loads the backend's libraries, which register exit handlers of their own.
    driver_exit_handlers_changed();
  }
  std::lock_guard lock(mutex_);
  probed_[i] = std::move(p);
  return *probed_[i];
}

void DeviceCatalog::probe_all() {
  for (std::size_t i = 0; i < kinds_.size(); ++i) probe_kind(i);
  std::lock_guard lock(mutex_);
  if (probed_all_) return;
  for (std::size_t i = 0; i < kinds_.size(); ++i) {
    statuses_.push_back(probed_[i]->status);
    devices_.insert(devices_.end(), probed_[i]->devices.begin(), probed_[i]->devices.end());
  }
  probed_all_ = true;
}

std::vector<BackendStatus> DeviceCatalog::backends() {
  probe_all();
  std::lock_guard lock(mutex_);
  return statuses_;
}

std::vector<DeviceInfo> DeviceCatalog::devices() {
  probe_all();
  std::lock_guard lock(mutex_);
  return devices_;
}

std::vector<DeviceInfo> DeviceCatalog::backend_devices(BackendKind kind) {
  const std::size_t i = kind_index(kind);
  if (i == kinds_.size()) return {};
  return probe_kind(i).devices;
}

void DeviceCatalog::fail_no_device(const std::string& id, BackendKind kind) {
  // A failure probes everything: its Fix hint lists every device there is.
  probe_all();
  std::lock_guard lock(mutex_);
  std::string known;
  for (const auto& d : devices_) known += (known.empty() ? "" : ", ") + d.id();
  std::string why;
  for (const auto& st : statuses_)
    if (st.kind == kind && !st.available) why = " (" + std::string(to_string(kind)) + ": " + st.reason + ")";
  fail(ErrorCategory::unavailable, "no device '" + id + "' on this machine" + why + ".",
       "pick one of the available devices: " + (known.empty() ? std::string("none") : known) + ".");
}

Device DeviceCatalog::open(const std::string& id) {
  const auto colon = id.find(':');
  const std::string kind_name = id.substr(0, colon);
  BackendKind kind{};
  try {
    kind = parse_backend_kind(kind_name);
  } catch (const Error&) {
    fail(ErrorCategory::invalid_argument, "device id '" + id + "' does not start with a backend name.",
         "use backend:index, e.g. vulkan:0 or cpu:0 (vgpu-probe lists the ids).");
  }
  // Only the id's own backend is probed: the others' libraries stay unloaded.
  const std::size_t ki = kind_index(kind);
  const DeviceInfo* match = nullptr;
  if (ki < kinds_.size())
    for (const DeviceInfo& d : probe_kind(ki).devices)
      if (d.id() == id || (colon == std::string::npos && d.backend == kind)) {
        match = &d;
        break;
      }
  if (match == nullptr) fail_no_device(id, kind);
  // Devices are stored under their canonical id, so "cpu" and "cpu:0" share one device. A lost
  // device is handed out as it is: its next call recovers it in place (DeviceCore::recover),
  // through the backend, which the reopen function keeps alive.
  {
    std::lock_guard lock(mutex_);
    if (auto it = open_.find(match->id()); it != open_.end()) return it->second->handle();
  }
  // Opened under the backend's own mutex (a context creation can take long), then published.
  std::lock_guard opening(*kind_mutexes_[ki]);
  {
    std::lock_guard lock(mutex_);
    if (auto it = open_.find(match->id()); it != open_.end()) return it->second->handle();
  }
  std::shared_ptr<ComputeBackend> backend = backend_of(match->backend);
  const std::uint32_t index = match->index;
  auto core = std::make_shared<DeviceCore>(
      backend->open(index), settings_->config,
      [backend, index] {
        auto impl = backend->open(index);
        driver_exit_handlers_changed();  // reopened after a loss: the same holds
        return impl;
      },
      settings_->store, op_tuner_of(*backend));
  driver_exit_handlers_changed();  // a context or device may register the driver's exit handlers
  std::lock_guard lock(mutex_);
  open_[match->id()] = core;
  return core->handle();
}

CounterSnapshot DeviceCatalog::counters() {
  std::lock_guard lock(mutex_);
  CounterSnapshot sum;
  for (auto& [id, core] : open_) sum = sum + core->counters().snapshot();
  return sum;
}

}  // namespace vgpu::detail
