// SPDX-License-Identifier: Apache-2.0
// core/runtime/queue/queue_run.cpp — vgpu::run(kernel, config, queue): the process-wide pipeline cache.
//
// One QueuePipeline per (device, kernel key, output_bytes, max_items_per_launch, timeout), kept
// for the process so that the design's free function compiles, allocates and binds once. The
// cache is bounded per device by its runtime's persistent limits (LruMap: 64 pipelines and
// 1 GiB of their buffers by default, least recently used out; the device's
// counters().persistent_evictions counts them): a pipeline holds device buffers, and a program
// that runs many different kernels or configurations should not keep them all. A pipeline
// being run by another thread stays alive while it runs (shared ownership); its buffers go
// when that run ends.
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "device_core.hpp"
#include "vgpu/cache/kernel_key.hpp"
#include "vgpu/error.hpp"
#include "vgpu/lru_map.hpp"
#include "vgpu/persistent_queue.hpp"
#include "vgpu/runtime.hpp"

namespace vgpu {

namespace {

using Pipelines = LruMap<std::string, std::shared_ptr<QueuePipeline>>;

// One device's pipelines (kept, with the device's handle, for the process: as before the bound,
// a device vgpu::run used stays open).
struct DevicePipelines {
  Device device;
  Pipelines pipelines;
};

std::mutex g_mutex;
std::vector<DevicePipelines> g_devices;  // guarded by g_mutex

DevicePipelines* slot_locked(const Device& device) {
  for (DevicePipelines& d : g_devices)
    if (d.device == device) return &d;
  return nullptr;
}

// Counts what the bounds evicted on device and hands it to dropped (freed without the lock).
void evicted(const Device& device, std::vector<std::shared_ptr<QueuePipeline>> out,
             std::vector<std::shared_ptr<QueuePipeline>>& dropped) {
  detail::DeviceAccess::core(device).counters().persistent_evictions.fetch_add(out.size(), std::memory_order_relaxed);
  for (auto& p : out) dropped.push_back(std::move(p));
}

// The key of kernel with config on device, computed without compiling: a CPU callable bypasses
// L1, so compiling to learn the key would build it on every run.
std::string key_of(const Device& device, const KernelSource& kernel, const DialectSource& code,
                   const QueueConfig& config) {
  std::string key = cache::make_kernel_key(kernel, code, config.options, device.info().fingerprint).hex();
  if (code.fn) {
    // The key cannot see a callable's code: add its type (unique per lambda expression) and,
    // for a plain function, its address. Captured state is the caller's: bump the version.
    key += std::string("|") + code.fn.target_type().name();
    if (auto* f = code.fn.target<void (*)(const CpuWorkgroup&)>())
      key += "@" + std::to_string(reinterpret_cast<std::uintptr_t>(*f));
  }
  // Compile options are in the kernel key; the rest of the config is here.
  return key + "|" + std::to_string(config.output_bytes) + "|" + std::to_string(config.max_items_per_launch) + "|" +
         std::to_string(config.timeout.count());
}

// Runs queue through the cached pipeline for (device, kernel, config), making it on a miss.
QueueReport run_cached(const Device& device, const KernelSource& kernel, const QueueConfig& config,
                       const PersistentQueue& queue) {
  const DialectSource* code = kernel.pick(device.info().dialects);
  if (code == nullptr) return QueuePipeline(device, kernel, config).run(queue);  // throws not_supported
  const std::string key = key_of(device, kernel, *code, config);
  std::vector<std::shared_ptr<QueuePipeline>> dropped;  // destroyed after g_mutex is let go
  std::shared_ptr<QueuePipeline> pipeline;
  {
    std::lock_guard lock(g_mutex);
    if (DevicePipelines* d = slot_locked(device))
      if (auto* p = d->pipelines.find(key)) pipeline = *p;
  }
  if (!pipeline) {
    auto made = std::make_shared<QueuePipeline>(device, kernel, config);
    std::lock_guard lock(g_mutex);
    DevicePipelines* d = slot_locked(device);
    if (d == nullptr) {
      g_devices.push_back(DevicePipelines{device, Pipelines(detail::DeviceAccess::core(device).persistent_limits())});
      d = &g_devices.back();
    }
    if (auto* p = d->pipelines.find(key)) {  // another thread made it meanwhile: use that one
      pipeline = *p;
      dropped.push_back(std::move(made));
    } else {
      pipeline = made;
      evicted(device, d->pipelines.put(key, std::move(made), pipeline->buffer_bytes()), dropped);
    }
  }
  QueueReport report = pipeline->run(queue);
  // Its buffers may have grown: account for them (evicting others past the bytes bound), unless
  // it was evicted or replaced meanwhile.
  const std::uint64_t bytes = pipeline->buffer_bytes();
  std::lock_guard lock(g_mutex);
  if (DevicePipelines* d = slot_locked(device))
    if (auto* p = d->pipelines.peek(key); p && *p == pipeline)
      evicted(device, d->pipelines.resize(key, bytes), dropped);
  dropped.push_back(std::move(pipeline));  // its last reference when it was evicted meanwhile
  // dropped goes after the lock (declared before it): closing a pipeline may wait for its device.
  return report;
}

}  // namespace

QueueReport run(const Device& device, const KernelSource& kernel, const QueueConfig& config,
                const PersistentQueue& queue) {
  if (!device)
    fail(ErrorCategory::invalid_argument, "vgpu::run of a queue needs an open device.",
         "pass a device from Runtime::open(), or call run(kernel, config, queue) for the default device.");
  if (queue.empty()) return {};
  return run_cached(device, kernel, config, queue);
}

QueueReport run(const KernelSource& kernel, const QueueConfig& config, const PersistentQueue& queue) {
  if (queue.empty()) return {};
  return run(Runtime::global().default_device(), kernel, config, queue);
}

}  // namespace vgpu
