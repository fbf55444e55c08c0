// SPDX-License-Identifier: Apache-2.0
// vgpu/backend/backend_settings.hpp — what a backend and the devices it opens are configured
// with: the resolved settings of the Runtime that made the backend, and that runtime's L2
// store. Backend-author interface. Backends never read the environment themselves: they read
// these (docs/architecture.md, "Configuration").
#pragma once

#include <memory>

#include "vgpu/cache/disk_store.hpp"
#include "vgpu/config.hpp"

namespace vgpu {

/// One runtime's settings as its backends and devices see them. Made once by the Runtime and
/// shared, never changed, by the backends it made and every device they open (a device may
/// outlive its Runtime). Thread-safety: a constant value; the store is safe from any thread.
struct BackendSettings {
  /// RuntimeOptions' overrides over the environment (as read when the Runtime was made).
  Config config;
  /// The L2 store to load and store compiled kernels in (never null).
  std::shared_ptr<cache::DiskStore> store;
  /// True when config.cpu_isa came from RuntimeOptions::cpu_isa: an unknown name is then an
  /// error (invalid_argument), not the warning VGPU_CPU_ISA gets.
  bool cpu_isa_from_code = false;

  /// Returns the settings of code without a Runtime of its own: vgpu::config() (the
  /// environment, read once) and cache::DiskStore::global(). Thread-safe.
  static std::shared_ptr<const BackendSettings> process();
};

}  // namespace vgpu
