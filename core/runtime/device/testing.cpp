// SPDX-License-Identifier: Apache-2.0
// core/runtime/device/testing.cpp — the hooks of vgpu/testing.hpp: simulated device loss, software
// devices' tuning, forgetting variant choices, holding a background calibration.
#include "vgpu/testing.hpp"

#include <atomic>
#include <chrono>
#include <mutex>

#include "background_worker.hpp"
#include "device_core.hpp"
#include "testing_hold.hpp"
#include "variant_choice.hpp"
#include "vgpu/kernels/gpu_tuning.hpp"

namespace vgpu {
namespace {

// The hold asked for (hold_background_calibration), and whether a calibration waits there.
struct Hold {
  std::mutex mutex;  // a leaf
  std::string device;
  std::atomic<bool> held{false};
};
Hold& hold() {
  static Hold* h = new Hold();  // never destroyed: a held thread may wake while the process exits
  return *h;
}

}  // namespace

void detail::testing_hold(const std::string& device_id) {
  Hold& h = hold();
  {
    std::lock_guard lock(h.mutex);
    if (h.device.empty() || h.device != device_id || !detail::BackgroundWorker::on_worker_thread()) return;
    h.device.clear();  // one hold per request
  }
  h.held.store(true);
  detail::BackgroundWorker::wait_for_stop_here(std::chrono::seconds(60));
  h.held.store(false);
}

namespace testing {

void force_device_lost(const Device& device, LossPoint when) {
  detail::DeviceCore& core = detail::DeviceAccess::core(device);
  if (when == LossPoint::now)
    core.force_lost("simulated by testing::force_device_lost");
  else
    core.inject_loss();
}

void hold_background_calibration(const std::string& device_id) {
  Hold& h = hold();
  std::lock_guard lock(h.mutex);
  h.device = device_id;
}

bool background_calibration_held() noexcept { return hold().held.load(); }

}  // namespace testing
}  // namespace vgpu
