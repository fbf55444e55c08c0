// SPDX-License-Identifier: Apache-2.0
// fallback/cpu/cpu_backend.cpp — the CPU fallback backend: enumeration and make_cpu_backend().
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include <oneapi/tbb/info.h>
#include <oneapi/tbb/version.h>

#include "cpu_device.hpp"
#include "cpu_op_tuner.hpp"
#include "cpu_isa.hpp"
#include "vgpu/backend/fingerprint.hpp"
#include "vgpu/backend/registry.hpp"
#include "vgpu/error.hpp"
#include "vgpu/platform/system_info.hpp"

namespace vgpu {
namespace {

/// Describes logical CPU device index (VGPU_CPU_DEVICES), whose built-in kernels are kernels.
DeviceInfo describe(const cpu::KernelTable& kernels, std::uint32_t index) {
  const std::string isa(kernels.isa);
  const platform::CpuIdentity& id = platform::cpu_identity();
  DeviceInfo info;
  info.backend = BackendKind::cpu;
  info.index = index;
  info.name = id.model;
  info.vendor = id.vendor;
  info.type = DeviceType::cpu;
  info.driver_version = "vgpu-cpu " + isa + " (oneTBB " + std::to_string(TBB_VERSION_MAJOR) + "." +
                        std::to_string(TBB_VERSION_MINOR) + ")";
  info.api_version = "C++20";
  info.memory_bytes = platform::physical_memory_bytes();
  info.compute_units = static_cast<std::uint32_t>(tbb::info::default_concurrency());
  info.limits.max_workgroup_size = {1024, 1024, 64};
  info.limits.max_workgroup_invocations = 1024;
  info.limits.max_workgroup_count = {2147483647u, 65535u, 65535u};
  info.limits.max_shared_memory_bytes = 0;
  info.limits.max_buffer_bytes = info.memory_bytes / 2;
  info.limits.max_bindings = 32;
  info.features = cpu::cpu_features();
  // bfloat16 matmuls on AMX tiles: the set has the kernel and the OS lets the process use tiles.
  const bool amx = kernels.find("matmul_bf16_amx") != nullptr && platform::enable_amx_tiles();
  if (amx) info.features.emplace_back(cpu::kAmxMatmulFeature);
  info.dialects = {std::string(dialect::cpu)};
  // The ISA is part of the identity: built-ins compiled for another ISA round differently.
  // Logical devices past the first carry their index, so selections and calibrations keyed by
  // fingerprint tell them apart; cpu:0 keeps the one-device fingerprint (existing caches stay warm).
  std::vector<std::pair<std::string, std::string>> parts = {
      {"backend", "cpu"}, {"vendor", id.vendor}, {"model", id.model}, {"isa", isa}};
  if (amx) parts.emplace_back("matmul_bf16", "amx");  // rounds otherwise than the conversions path
  if (index > 0) parts.emplace_back("index", std::to_string(index));
  info.fingerprint = make_fingerprint(parts);
  return info;
}

/// The CPU fallback: always compiled in, always available, VGPU_CPU_DEVICES logical devices
/// (default one). The logical devices share oneTBB's process-wide thread pool: each dispatch
/// spreads over every core, so N of them running at once share the cores rather than N× them.
/// Thread-safety: immutable after construction; every member is safe to call from several threads.
class CpuBackend final : public ComputeBackend {
 public:
  /// Chooses the instruction set the settings name (or the best); an unknown name set in code
  /// throws invalid_argument here, one this CPU cannot run is kept for enumerate() and open().
  explicit CpuBackend(std::shared_ptr<const BackendSettings> settings)
      : settings_(settings ? std::move(settings) : BackendSettings::process()) {
    try {
      kernels_ = &cpu::resolve_kernels(settings_->config.cpu_isa, settings_->cpu_isa_from_code);
    } catch (const Error& e) {
      if (e.category() == ErrorCategory::invalid_argument) throw;
      unusable_ = std::make_shared<Error>(e);
    }
  }

  /// Returns BackendKind::cpu.
  BackendKind kind() const noexcept override { return BackendKind::cpu; }
  /// Returns the rule by which it runs the built-in ops (its registry entry names the same).
  std::shared_ptr<const OpTuner> op_tuner() const override { return cpu::cpu_op_tuner(); }

  /// Returns compiled in and available: the CPU is always there.
  BackendStatus status() override {
    BackendStatus s;
    s.kind = BackendKind::cpu;
    s.compiled_in = true;
    s.available = true;
    return s;
  }

  /// Returns the logical CPU devices; throws not_supported when the ISA asked for cannot run here.
  std::vector<DeviceInfo> enumerate() override {
    std::vector<DeviceInfo> all;
    const cpu::KernelTable& set = kernels();
    for (std::uint32_t i = 0; i < count(); ++i) all.push_back(describe(set, i));
    return all;
  }

  /// Opens cpu:index; throws invalid_argument past VGPU_CPU_DEVICES.
  std::unique_ptr<DeviceImpl> open(std::uint32_t index) override {
    if (index >= count())
      fail(ErrorCategory::invalid_argument,
           "the CPU backend has " + std::to_string(count()) + " device(s) (cpu:0 ... cpu:" +
               std::to_string(count() - 1) + "); cpu:" + std::to_string(index) + " does not exist.",
           count() == 1 ? "use VGPU_DEVICE=cpu:0 (the CPU backend spreads work over every core itself), or set "
                          "VGPU_CPU_DEVICES for several logical CPU devices."
                        : "use an index below VGPU_CPU_DEVICES, or raise it.");
    return std::make_unique<cpu::CpuDevice>(describe(kernels(), index), *kernels_, settings_);
  }

 private:
  /// Returns how many logical devices this backend exposes.
  std::uint32_t count() const noexcept { return settings_->config.cpu_devices; }

  /// Returns the chosen ISA's kernel set; throws why the ISA asked for cannot run here.
  const cpu::KernelTable& kernels() const {
    if (unusable_) throw *unusable_;
    return *kernels_;
  }

  std::shared_ptr<const BackendSettings> settings_;
  const cpu::KernelTable* kernels_ = nullptr;
  std::shared_ptr<const Error> unusable_;  // set instead of kernels_ when the ISA cannot run here
};

}  // namespace

/// Creates the CPU fallback backend (declared in vgpu/backend/registry.hpp).
std::unique_ptr<ComputeBackend> make_cpu_backend(std::shared_ptr<const BackendSettings> settings) {
  return std::make_unique<CpuBackend>(std::move(settings));
}

}  // namespace vgpu
