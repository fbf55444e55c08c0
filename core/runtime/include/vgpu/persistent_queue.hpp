// SPDX-License-Identifier: Apache-2.0
// vgpu/persistent_queue.hpp — many id + payload work items drained in one coalesced launch.
#pragma once

#include "vgpu/export.hpp"

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <span>
#include <type_traits>
#include <unordered_set>
#include <vector>

#include "vgpu/device.hpp"
#include "vgpu/kernel_source.hpp"

namespace vgpu {

// ---------------------------------------------------------------------------------------------
// The queue ABI (docs/queue.md), the same on every backend (GLSL on Vulkan and OpenGL, CUDA,
// CPU callables). A queue kernel has exactly two bindings and an 8-byte params block:
//
//   slot 0, read:        `in`, 32-bit words:
//                          words [4*i, 4*i+4): item i's entry
//                            { in_offset  (words, from the start of `in`),
//                              in_bytes   (the payload's length in bytes),
//                              out_offset (words, from the start of `out`),
//                              out_capacity (bytes the kernel may write for item i) }
//                          then the payloads, each starting on a 4-byte boundary, zero-padded.
//   slot 1, read_write:  `out`, 32-bit words:
//                          words [2*i, 2*i+2): item i's result { out_bytes, emits }, zeroed
//                          before each launch; then the output payload areas.
//   params (8 bytes):    { item_base, item_count }: this launch covers items
//                          [item_base, item_base + item_count) of the tables above.
//
// One invocation per item along x: item i = item_base + global id x, for global id x <
// item_count (the launch rounds up to whole workgroups, so later invocations return). For its
// item the kernel reads in_bytes bytes from word in_offset, writes at most out_capacity bytes
// from word out_offset of `out`, stores the count in out_bytes and adds 1 to emits (atomicAdd:
// vgpu checks every item emitted exactly once). Item indices are queue positions; ids never
// reach the kernel.
//
// Lanes: a launch may give each item several invocations, one per workgroup along y (lane =
// gl_WorkGroupID.y of gl_NumWorkGroups.y; CUDA blockIdx.y of gridDim.y; CPU workgroup_id[1] of
// num_workgroups[1]): they share the item's work, and only lane 0 writes out_bytes and emits.
// QueueConfig::lanes says how many; on a device without a loop limit it is 1 unless asked.
// ---------------------------------------------------------------------------------------------

/// The queue ABI's per-launch params block (the 8 bytes every queue kernel declares).
struct VGPU_API QueueLaunch {
  std::uint32_t item_base = 0;   ///< first item of this launch
  std::uint32_t item_count = 0;  ///< items in this launch
};

/// One entry of the `in` table (4 words per item).
struct VGPU_API QueueItemEntry {
  std::uint32_t in_offset = 0;     ///< payload start, in 32-bit words from the start of `in`
  std::uint32_t in_bytes = 0;      ///< payload length in bytes
  std::uint32_t out_offset = 0;    ///< output area start, in 32-bit words from the start of `out`
  std::uint32_t out_capacity = 0;  ///< bytes the kernel may write for this item
};

/// One entry of the `out` results table (2 words per item).
struct VGPU_API QueueResultEntry {
  std::uint32_t out_bytes = 0;  ///< bytes the kernel wrote for this item
  std::uint32_t emits = 0;      ///< outputs the kernel emitted for this item (must end as 1)
};

/// Work items, each a stable id and a byte payload, in push order. A plain container: it
/// holds host memory only and may be run on any device. Thread-safety: not synchronised; a
/// queue must not be pushed to while it is being pushed to or run elsewhere.
class VGPU_API PersistentQueue {
 public:
  /// The most items one queue holds: item indices are 32-bit on the device.
  static constexpr std::uint64_t kMaxItems = 0xFFFFFFFFull;

  /// Makes an empty queue holding at most max_items items (≤ kMaxItems; invalid_argument else).
  explicit PersistentQueue(std::uint64_t max_items = kMaxItems);

  /// Appends an item; payload is copied. Throws invalid_argument (queue unchanged) when the
  /// queue already holds max_items items ("shard work into multiple queues"), when id is
  /// already in the queue, or when the payload is longer than 4 GiB − 4 bytes.
  void push(std::uint64_t id, std::span<const std::byte> payload);
  /// Appends an item whose payload is the bytes of a trivially copyable value.
  template <class T>
  void push_value(std::uint64_t id, const T& value) {
    static_assert(std::is_trivially_copyable_v<T>, "payload values must be trivially copyable");
    push(id, std::as_bytes(std::span<const T>(&value, 1)));
  }
  /// Returns the number of items.
  std::size_t size() const noexcept { return ids_.size(); }
  /// Returns true when the queue holds no item.
  bool empty() const noexcept { return ids_.empty(); }
  /// Removes every item (keeps the host memory for the next pushes).
  void clear() noexcept;

  /// Returns item i's id (i < size()).
  std::uint64_t id(std::size_t i) const { return ids_.at(i); }
  /// Returns item i's payload (valid until the next push or clear).
  std::span<const std::byte> payload(std::size_t i) const;
  /// Returns the sum of the payload lengths in bytes.
  std::uint64_t payload_bytes() const noexcept { return bytes_.size(); }

 private:
  std::uint64_t max_items_;
  std::vector<std::uint64_t> ids_;
  std::vector<std::uint64_t> starts_;       // byte offset of each payload in bytes_ (size()+1 entries)
  std::vector<std::byte> bytes_;            // the payloads, back to back
  std::unordered_set<std::uint64_t> seen_;  // the ids, for the duplicate check
};

/// How a queue kernel runs. A plain value.
struct VGPU_API QueueConfig {
  /// Bytes the kernel may write per item; 0: as many as that item's payload has.
  std::uint32_t output_bytes = 0;
  /// The most items one launch takes (0: as many as the device's limits allow). Lower it to
  /// bound the latency of one launch; the run then counts the extra launches.
  std::uint32_t max_items_per_launch = 0;
  /// Invocations per item, its lanes (workgroups along y; docs/queue.md, "Lanes"). 0: as the
  /// device needs — 1, or on a device whose driver cuts loops short
  /// (DeviceLimits::max_loop_iterations) enough that no lane walks more than a quarter of that
  /// limit in words of a launch's longest item. n: exactly n per launch. A kernel that ignores
  /// lanes (one invocation walks its whole item) needs 1, and is then wrong past that limit.
  std::uint32_t lanes = 0;
  /// The run's time limit (0: the device's, Device::timeout()).
  std::chrono::milliseconds timeout{0};
  /// Compile options of the kernel (specialisation constants, workgroup size).
  CompileOptions options{};
};

/// One item's result: its id and the bytes the kernel wrote for it.
struct VGPU_API QueueResult {
  std::uint64_t id = 0;
  std::span<const std::byte> payload;  ///< points into the QueueReport that holds it

  /// Returns the payload's first sizeof(T) bytes as T; throws invalid_argument when shorter.
  template <class T>
  T as() const {
    static_assert(std::is_trivially_copyable_v<T>, "result values must be trivially copyable");
    check_size(sizeof(T));
    T value;
    std::memcpy(&value, payload.data(), sizeof(T));
    return value;
  }

 private:
  void check_size(std::size_t bytes) const;
};

/// What one queue run did: its launches and one result per item, in queue order.
/// A plain value (results point into storage, which moves with it; a copy points into its own).
struct VGPU_API QueueReport {
  QueueReport() = default;
  /// Copies other, pointing the copy's results into the copy's storage.
  QueueReport(const QueueReport& other);
  /// Replaces this with a copy of other (results point into this storage).
  QueueReport& operator=(const QueueReport& other);
  QueueReport(QueueReport&&) noexcept = default;
  QueueReport& operator=(QueueReport&&) noexcept = default;

  std::uint64_t kernel_launches = 0;  ///< dispatches made (0 for an empty queue)
  std::uint64_t round_trips = 0;      ///< uploads + read-backs (1 unless buffer limits split the queue)
  std::vector<QueueResult> results;   ///< one per item, in queue order
  std::vector<std::byte> storage;     ///< the output payloads the results point into
};

/// A queue kernel compiled, allocated and bound once for one (device, kernel, config); each
/// run() uploads the queue's tables and payloads in one upload, runs them in one launch (or
/// the fewest the device's limits allow) and reads every result back in one read-back. A run
/// of the same or a smaller total size than an earlier one allocates, compiles and binds
/// nothing; larger ones grow the buffers geometrically. A lost device is recovered and the run
/// retried once. Thread-safety: runs are serialised by an internal mutex; safe from any thread.
class VGPU_API QueuePipeline {
 public:
  /// Compiles kernel for device and checks it follows the queue ABI (two bindings, read then
  /// read_write, 8-byte params); throws invalid_argument naming what differs, compile_error.
  QueuePipeline(Device device, KernelSource kernel, QueueConfig config = {});

  /// Drains queue: one result per item in queue order. Throws (queue and pipeline intact)
  /// invalid_argument for a payload larger than the device allows and for a kernel that broke
  /// the ABI (an item with no output or more than one, more bytes than its capacity, an output
  /// count different from the item count), out_of_memory when the buffers cannot grow ("split
  /// the queue"), timeout, device_lost when recovery failed.
  QueueReport run(const PersistentQueue& queue);
  /// Drains items [first, first + count) of queue only (clipped to its end): one result per
  /// item of the range, in queue order, without copying the queue (QueuePipelineSet gives each
  /// device a range so). Throws as run().
  QueueReport run(const PersistentQueue& queue, std::uint64_t first, std::uint64_t count);

  /// Returns the device the pipeline runs on.
  const Device& device() const noexcept { return device_; }
  /// Returns the compiled kernel.
  const Kernel& kernel() const noexcept { return kernel_; }
  /// Returns the configuration it was built with.
  const QueueConfig& config() const noexcept { return config_; }
  /// Returns the number of runs so far.
  std::uint64_t runs() const;
  /// Returns the bytes of device memory its buffers hold now (they grow with the largest queue
  /// run so far). Does not wait for a run in progress.
  std::uint64_t buffer_bytes() const noexcept { return buffer_bytes_.load(std::memory_order_relaxed); }

  /// Closes the pipeline (its buffers go once the device has finished with them).
  ~QueuePipeline();
  QueuePipeline(const QueuePipeline&) = delete;
  QueuePipeline& operator=(const QueuePipeline&) = delete;

 private:
  struct Resources;
  friend class QueuePipelineSet;  // drains its ranges straight into the merged report (run_into)
  // Where run_into puts a range's outputs: item first + j's at dest + (the capacities of the
  // range's items before it), its result in results[j]. The caller sized both.
  struct Sink {
    std::byte* dest = nullptr;
    QueueResult* results = nullptr;
  };
  // run(queue, first, count) writing into sink instead of the report's own storage (the report
  // returned holds the counters only): no second copy of the outputs when a set merges ranges.
  QueueReport run_into(const PersistentQueue& queue, std::uint64_t first, std::uint64_t count, const Sink& sink);
  // One attempt at items [first, first + count), into sink when it is set; mutex_ held.
  QueueReport run_once(const PersistentQueue& queue, std::uint64_t first, std::uint64_t count, const Sink* sink);
  Device device_;
  KernelSource source_;
  QueueConfig config_;
  Kernel kernel_;
  std::unique_ptr<Resources> resources_;  // buffers, binding set, batch; grown by run()
  mutable std::mutex mutex_;
  std::uint64_t runs_ = 0;
  std::atomic<std::uint64_t> buffer_bytes_{0};  // the resources' in_bytes + out_bytes (set under mutex_)
};

/// Runs queue through the pipeline made once per (device, kernel, config) and kept for the
/// process (device: Runtime::global().default_device()); the design's run(kernel, config, queue).
VGPU_API QueueReport run(const KernelSource& kernel, const QueueConfig& config, const PersistentQueue& queue);
/// run() on the given device.
VGPU_API QueueReport run(const Device& device, const KernelSource& kernel, const QueueConfig& config,
                         const PersistentQueue& queue);

}  // namespace vgpu
