// SPDX-License-Identifier: Apache-2.0
// core/runtime/queue/queue_layout.hpp — how a queue is laid out in the queue ABI's `in` and `out` buffers
// and split into round trips (buffer limits) and launches (group-count limits). Pure host code:
// no device is touched here, so the splitting rules are testable and the pipeline stays small.
#pragma once

#include <cstdint>
#include <vector>

#include "vgpu/persistent_queue.hpp"

namespace vgpu::detail {

/// The limits a queue is split by.
struct QueueLimits {
  std::uint64_t max_buffer_bytes = 0;      ///< the largest `in` or `out` buffer (0: no limit but 32-bit word offsets)
  std::uint64_t max_items_per_launch = 0;  ///< max_workgroup_count.x × local size x, or the config's lower bound
  std::uint32_t output_bytes = 0;          ///< QueueConfig::output_bytes (0: each item's payload length)
  std::uint32_t guard_entries = 0;         ///< zeroed result entries after the table that catch unguarded kernels
  /// Lanes (docs/queue.md): QueueConfig::lanes when not 0 (every launch gets exactly that many);
  /// else each launch gets enough that no lane has more than lane_words words of an item to
  /// walk (0: no bound, one lane).
  std::uint32_t lanes = 0;
  std::uint64_t lane_words = 0;
  std::uint32_t max_lanes = 1;  ///< the most lanes a launch may have (max_workgroup_count.y)
};

/// One round trip: items [first, first + count) with their buffer sizes and launches.
struct QueueChunk {
  std::uint64_t first = 0;
  std::uint64_t count = 0;
  std::uint64_t in_words = 0;         ///< words of `in` used (table + payloads)
  std::uint64_t out_words = 0;        ///< words of `out` used (table + guard + output areas)
  std::vector<QueueLaunch> launches;  ///< item_base is relative to the chunk
  std::vector<std::uint32_t> lanes;   ///< each launch's lanes (workgroups along y), ≥ 1
};

/// Returns the bytes item i may write under limits.
std::uint32_t queue_out_capacity(const PersistentQueue& queue, std::size_t i, const QueueLimits& limits);

/// Splits items [first, first + count) of queue (count UINT64_MAX: to the end) into the fewest
/// round trips the buffer limit allows, each into the fewest launches the launch limit allows,
/// each launch with the lanes its longest item needs. Throws invalid_argument naming the first
/// item that alone does not fit a buffer ("a payload larger than the device allows") or the
/// device's lanes.
std::vector<QueueChunk> plan_queue(const PersistentQueue& queue, const QueueLimits& limits,
                                   const std::string& device_id, std::uint64_t first = 0,
                                   std::uint64_t count = UINT64_MAX);

/// Writes chunk's `in` words (entries, then zero-padded payloads) into words (resized).
void pack_queue_chunk(const PersistentQueue& queue, const QueueChunk& chunk, const QueueLimits& limits,
                      std::vector<std::uint32_t>& words);

}  // namespace vgpu::detail
