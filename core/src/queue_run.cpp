// SPDX-License-Identifier: Apache-2.0
// core/src/queue_run.cpp — vgpu::run(kernel, config, queue): the process-wide pipeline cache.
//
// One QueuePipeline per (device, kernel key, output_bytes, max_items_per_launch, timeout), kept
// for the process so that the design's free function compiles, allocates and binds once. The
// cache is bounded (kMaxPipelines, least recently used out): a pipeline holds device buffers,
// and a program that runs many different kernels should not keep them all. A pipeline being
// run by another thread stays alive while it runs (shared ownership).
#include <algorithm>
#include <cstdint>
#include <string>
#include <list>
#include <memory>
#include <mutex>

#include "vgpu/cache/kernel_key.hpp"
#include "vgpu/error.hpp"
#include "vgpu/persistent_queue.hpp"
#include "vgpu/runtime.hpp"

namespace vgpu {

namespace {

constexpr std::size_t kMaxPipelines = 64;

struct Entry {
  Device device;
  std::string key;
  QueueConfig config;
  std::shared_ptr<QueuePipeline> pipeline;
};

bool same_config(const QueueConfig& a, const QueueConfig& b) {
  return a.output_bytes == b.output_bytes && a.max_items_per_launch == b.max_items_per_launch &&
         a.timeout == b.timeout;  // compile options are in the kernel key
}

std::mutex g_mutex;
std::list<Entry> g_pipelines;  // most recently used first

std::shared_ptr<QueuePipeline> pipeline_for(const Device& device, const KernelSource& kernel,
                                            const QueueConfig& config) {
  const DialectSource* code = kernel.pick(device.info().dialects);
  if (code == nullptr) return std::make_shared<QueuePipeline>(device, kernel, config);  // throws not_supported
  // The kernel's cache key, computed without compiling: a CPU callable bypasses L1, so
  // compiling to learn the key would build it on every run.
  std::string key = cache::make_kernel_key(kernel, *code, config.options, device.info().fingerprint).hex();
  if (code->fn) {
    // The key cannot see a callable's code: add its type (unique per lambda expression) and,
    // for a plain function, its address. Captured state is the caller's: bump the version.
    key += std::string("|") + code->fn.target_type().name();
    if (auto* f = code->fn.target<void (*)(const CpuWorkgroup&)>())
      key += "@" + std::to_string(reinterpret_cast<std::uintptr_t>(*f));
  }
  {
    std::lock_guard lock(g_mutex);
    for (auto it = g_pipelines.begin(); it != g_pipelines.end(); ++it)
      if (it->device == device && it->key == key && same_config(it->config, config)) {
        g_pipelines.splice(g_pipelines.begin(), g_pipelines, it);
        return it->pipeline;
      }
  }
  auto made = std::make_shared<QueuePipeline>(device, kernel, config);
  std::lock_guard lock(g_mutex);
  for (const Entry& e : g_pipelines)  // another thread made it meanwhile: use that one
    if (e.device == device && e.key == key && same_config(e.config, config)) return e.pipeline;
  g_pipelines.push_front(Entry{device, key, config, made});
  if (g_pipelines.size() > kMaxPipelines) g_pipelines.pop_back();
  return made;
}

}  // namespace

QueueReport run(const Device& device, const KernelSource& kernel, const QueueConfig& config,
                const PersistentQueue& queue) {
  if (!device)
    fail(ErrorCategory::invalid_argument, "vgpu::run of a queue needs an open device.",
         "pass a device from Runtime::open(), or call run(kernel, config, queue) for the default device.");
  if (queue.empty()) return {};
  return pipeline_for(device, kernel, config)->run(queue);
}

QueueReport run(const KernelSource& kernel, const QueueConfig& config, const PersistentQueue& queue) {
  if (queue.empty()) return {};
  return run(Runtime::global().default_device(), kernel, config, queue);
}

}  // namespace vgpu
