// SPDX-License-Identifier: Apache-2.0
// vgpu/queue_pipeline_set.hpp — one PersistentQueue drained over a DeviceSet: a QueuePipeline per
// device, each given a contiguous range of the queue by measured speed (docs/scale-out.md).
#pragma once

#include <memory>
#include <vector>

#include "vgpu/cache.hpp"
#include "vgpu/device_set.hpp"
#include "vgpu/export.hpp"
#include "vgpu/persistent_queue.hpp"

namespace vgpu {

/// A QueuePipeline per device of a DeviceSet. run(queue) gives each device a contiguous range of
/// the queue's items (QueuePipeline::run over [first, first + count): no payload is copied into
/// per-device queues), runs the ranges at once, one thread per device, each writing its outputs
/// in place into the merged report (results in queue order; storage laid out by capacity, so it
/// may hold gaps), counters summed: the same results as one device (the queue ABI is
/// deterministic per item). Shares follow each device's measured seconds per item
/// of its share in this object's earlier runs (the first run: equal weights; a device without a
/// measurement: the median of the others). A device whose range fails (compile error, out of
/// memory, unavailable, not supported, device lost past its recovery) has its range rerun on the
/// others and is left out from then on (stats().last_failures names it; left_out() says so).
/// A device that cannot compile the kernel when the set is made is left out the same way.
/// Thread-safety: runs are serialised by an internal mutex; every member is safe from any thread.
/// The set's runtime must outlive it.
class VGPU_API QueuePipelineSet {
 public:
  /// Compiles kernel on every device of devices (QueuePipeline); throws what the last device's
  /// compile threw when none can take it, invalid_argument for a kernel breaking the queue ABI.
  QueuePipelineSet(DeviceSet devices, KernelSource kernel, QueueConfig config = {});
  ~QueuePipelineSet();
  QueuePipelineSet(const QueuePipelineSet&) = delete;
  QueuePipelineSet& operator=(const QueuePipelineSet&) = delete;

  /// Drains queue over the set: one result per item, in queue order. Throws as QueuePipeline::run
  /// (a bad kernel or payload is the caller's), unavailable (with a Fix) when every device failed.
  QueueReport run(const PersistentQueue& queue);

  /// Returns the set.
  const DeviceSet& devices() const noexcept;
  /// Returns the weights the next run splits by (sums to 1; 0 for a device left out).
  std::vector<double> weights() const;
  /// Returns each device's measured seconds per item (0 until it ran a share).
  std::vector<double> seconds_per_item() const;
  /// Returns which devices are left out (failed, or could not compile the kernel).
  std::vector<bool> left_out() const;
  /// Returns the bytes of device memory the pipelines' buffers hold now, summed over the devices.
  std::uint64_t buffer_bytes() const;
  /// Returns what the runs did: batches = runs, last_shares = the last run's first split, items
  /// per device, failures, rerun_items, last_failures (the other counters stay 0).
  MultiStats stats() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace vgpu
