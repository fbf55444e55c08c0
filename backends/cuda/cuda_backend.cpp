// SPDX-License-Identifier: Apache-2.0
// backends/cuda/cuda_backend.cpp — the CUDA ComputeBackend: status, enumeration (one vgpu
// device per CUDA device), open.
#include <cstdio>
#include <mutex>

#include "cuda_device.hpp"
#include "cuda_op_tuner.hpp"
#include "vgpu/backend/fingerprint.hpp"
#include "vgpu/backend/registry.hpp"
#include "vgpu/error.hpp"

namespace vgpu {
namespace cuda {
namespace {

struct Found {
  CUdevice device;
  int cc_major, cc_minor;
  DeviceInfo info;
};

int attribute(const DriverFns& f, CUdevice d, CUdevice_attribute a) {
  int v = 0;
  f.cuDeviceGetAttribute(&v, a, d);
  return v;
}

std::string version_text(int v) { return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10); }

DeviceInfo describe(const DriverFns& f, const NvrtcFns& nv, CUdevice d, std::uint32_t index, int driver, int* ccmaj,
                    int* ccmin) {
  DeviceInfo info;
  info.backend = BackendKind::cuda;
  info.index = index;
  char name[256] = {};
  f.cuDeviceGetName(name, sizeof name, d);
  info.name = name;
  info.vendor = "NVIDIA";
  info.type = attribute(f, d, CU_DEVICE_ATTRIBUTE_INTEGRATED) ? DeviceType::integrated_gpu : DeviceType::discrete_gpu;
  *ccmaj = attribute(f, d, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  *ccmin = attribute(f, d, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  const std::string cc = std::to_string(*ccmaj) + "." + std::to_string(*ccmin);
  const std::string nvrtc = std::to_string(nv.major) + "." + std::to_string(nv.minor);
  info.driver_version = version_text(driver);
  info.api_version = "CUDA " + version_text(driver) + ", compute capability " + cc + ", NVRTC " + nvrtc;
  std::size_t mem = 0;
  f.cuDeviceTotalMem(&mem, d);
  info.memory_bytes = mem;
  info.compute_units = static_cast<std::uint32_t>(attribute(f, d, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT));
  auto u = [&](CUdevice_attribute a) { return static_cast<std::uint32_t>(attribute(f, d, a)); };
  info.limits.max_workgroup_size = {u(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X), u(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y),
                                    u(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z)};
  info.limits.max_workgroup_invocations = u(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  info.limits.max_workgroup_count = {u(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X), u(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y),
                                     u(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z)};
  // Static __shared__ arrays are limited to 48 KiB per block whatever the device offers.
  info.limits.max_shared_memory_bytes = u(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
  info.limits.max_buffer_bytes = mem;
  info.features = {"sm_" + std::to_string(*ccmaj) + std::to_string(*ccmin), "cuda_c", "nvrtc_" + nvrtc};
  info.dialects = {std::string(dialect::cuda)};
  CUuuid uuid{};
  std::string uuid_hex;
  if (f.cuDeviceGetUuid(&uuid, d) == CUDA_SUCCESS)
    for (char c : uuid.bytes) {
      char b[3];
      std::snprintf(b, sizeof b, "%02x", static_cast<unsigned char>(c));
      uuid_hex += b;
    }
  info.device_uuid = uuid_hex;
  // Every CUDA device is NVIDIA's; the driver API tells no PCI device id (only the bus location)
  // and no driver UUID, so those stay unknown.
  info.vendor_id = 0x10DEu;
  if (const int warp = attribute(f, d, CU_DEVICE_ATTRIBUTE_WARP_SIZE); warp > 0)
    info.subgroup_size = static_cast<std::uint32_t>(warp);
  info.fingerprint = make_fingerprint({{"backend", "cuda"},
                                       {"name", info.name},
                                       {"uuid", uuid_hex},
                                       {"compute_capability", cc},
                                       {"driver_version", std::to_string(driver)},
                                       {"nvrtc_version", nvrtc}});
  return info;
}

/// The CUDA backend. The driver and NVRTC are loaded and devices listed on first use.
/// Thread-safety: all members are safe to call concurrently.
class CudaBackend final : public ComputeBackend {
 public:
  /// Opens its devices with settings (one runtime's).
  explicit CudaBackend(std::shared_ptr<const BackendSettings> settings) : settings_(std::move(settings)) {}

  BackendKind kind() const noexcept override { return BackendKind::cuda; }
  /// Returns the rule by which it runs the built-in ops (its registry entry names the same).
  std::shared_ptr<const OpTuner> op_tuner() const override { return configured_cuda_op_tuner(); }

  BackendStatus status() override {
    init();
    BackendStatus st;
    st.kind = BackendKind::cuda;
    st.compiled_in = true;
    st.available = reason_.empty();
    st.reason = reason_;
    return st;
  }

  std::vector<DeviceInfo> enumerate() override {
    init();
    std::vector<DeviceInfo> out;
    for (const auto& d : devices_) out.push_back(d.info);
    return out;
  }

  std::unique_ptr<DeviceImpl> open(std::uint32_t index) override {
    init();
    if (!reason_.empty())
      fail(ErrorCategory::unavailable, "CUDA is unavailable: " + reason_ + ".", "run vgpu-probe for details.");
    if (index >= devices_.size())
      fail(ErrorCategory::invalid_argument, "there is no CUDA device " + std::to_string(index) + ".",
           "use an index from vgpu-probe's device list.");
    const Found& d = devices_[index];
    return std::make_unique<CudaDevice>(*driver_, nvrtc_, d.device, d.info, d.cc_major, d.cc_minor, settings_);
  }

 private:
  void init() {
    std::call_once(once_, [this] {
      std::string why;
      driver_ = load_driver(&why);
      if (!driver_) {
        reason_ = why;
        return;
      }
      nvrtc_ = load_nvrtc(&why);
      if (!nvrtc_) {
        reason_ = why;
        return;
      }
      const DriverFns& f = *driver_;
      int count = 0, driver = 0;
      CUresult r = f.cuDeviceGetCount(&count);
      if (r != CUDA_SUCCESS) {
        reason_ = "cuDeviceGetCount failed with " + error_text(f, r);
        return;
      }
      if (count == 0) {
        reason_ = "no CUDA device (the driver loaded but reports none)";
        return;
      }
      f.cuDriverGetVersion(&driver);
      for (int i = 0; i < count; ++i) {
        CUdevice d = 0;
        if (f.cuDeviceGet(&d, i) != CUDA_SUCCESS) continue;
        Found found{d, 0, 0, {}};
        found.info = describe(f, *nvrtc_, d, static_cast<std::uint32_t>(devices_.size()), driver, &found.cc_major,
                              &found.cc_minor);
        devices_.push_back(std::move(found));
      }
      if (devices_.empty()) reason_ = "no usable CUDA device";
    });
  }

  std::shared_ptr<const BackendSettings> settings_;
  std::once_flag once_;
  const DriverFns* driver_ = nullptr;
  const NvrtcFns* nvrtc_ = nullptr;
  std::vector<Found> devices_;
  std::string reason_;
};

}  // namespace
}  // namespace cuda

std::unique_ptr<ComputeBackend> make_cuda_backend(std::shared_ptr<const BackendSettings> settings) {
  return std::make_unique<cuda::CudaBackend>(std::move(settings));
}

}  // namespace vgpu
