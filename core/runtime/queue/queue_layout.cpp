// SPDX-License-Identifier: Apache-2.0
// core/runtime/queue/queue_layout.cpp — packing tables and splitting a queue (queue_layout.hpp).
#include "queue_layout.hpp"

#include <algorithm>
#include <cstring>
#include <string>

#include "vgpu/error.hpp"

namespace vgpu::detail {

namespace {

constexpr std::uint64_t words_of(std::uint64_t bytes) { return (bytes + 3) / 4; }

// Offsets in the tables are 32-bit word counts: no buffer may hold more words than that.
constexpr std::uint64_t kMaxWords = 0xFFFFFFFFull;

std::uint64_t buffer_word_limit(const QueueLimits& limits) {
  const std::uint64_t by_device = limits.max_buffer_bytes == 0 ? kMaxWords : limits.max_buffer_bytes / 4;
  return std::min(by_device, kMaxWords);
}

// The words one lane of item i may have to walk: its payload's or its output area's, the longer.
std::uint64_t item_words(const PersistentQueue& queue, std::size_t i, const QueueLimits& limits) {
  return words_of(std::max<std::uint64_t>(queue.payload(i).size(), queue_out_capacity(queue, i, limits)));
}

// The lanes a launch of items [first, first + count) gets (QueueLimits::lanes, lane_words).
std::uint32_t launch_lanes(const PersistentQueue& queue, std::uint64_t first, std::uint64_t count,
                           const QueueLimits& limits, const std::string& device_id) {
  if (limits.lanes != 0) {
    if (limits.lanes > limits.max_lanes)
      fail(
          ErrorCategory::invalid_argument,
          "QueueConfig::lanes = " + std::to_string(limits.lanes) + " is more lanes (workgroups along y) than " +
              device_id + " launches (" + std::to_string(limits.max_lanes) + ").",
          "set QueueConfig::lanes to at most " + std::to_string(limits.max_lanes) + ", or 0 to let the device decide.");
    return limits.lanes;
  }
  if (limits.lane_words == 0) return 1;
  std::uint64_t longest = 0, at = first;
  for (std::uint64_t i = first; i < first + count; ++i) {
    const std::uint64_t w = item_words(queue, static_cast<std::size_t>(i), limits);
    if (w > longest) longest = w, at = i;
  }
  const std::uint64_t lanes = std::max<std::uint64_t>(1, (longest + limits.lane_words - 1) / limits.lane_words);
  if (lanes > limits.max_lanes)
    fail(ErrorCategory::invalid_argument,
         "item id " + std::to_string(queue.id(at)) + " (position " + std::to_string(at) + ") has " +
             std::to_string(longest) + " words to walk, more than " + device_id + " can spread over its " +
             std::to_string(limits.max_lanes) + " lanes of " + std::to_string(limits.lane_words) +
             " words each (its driver stops a shader's loops early: DeviceLimits::max_loop_iterations).",
         "split that payload over several items, or run the queue on a device without a loop limit.");
  return static_cast<std::uint32_t>(lanes);
}

}  // namespace

std::uint32_t queue_out_capacity(const PersistentQueue& queue, std::size_t i, const QueueLimits& limits) {
  return limits.output_bytes != 0 ? limits.output_bytes : static_cast<std::uint32_t>(queue.payload(i).size());
}

std::vector<QueueChunk> plan_queue(const PersistentQueue& queue, const QueueLimits& limits,
                                   const std::string& device_id, std::uint64_t first, std::uint64_t count) {
  std::vector<QueueChunk> chunks;
  const std::uint64_t limit = buffer_word_limit(limits);
  const std::uint64_t guard = 2ull * limits.guard_entries;
  const std::uint64_t n =
      first + std::min<std::uint64_t>(count, queue.size() - std::min<std::uint64_t>(first, queue.size()));
  QueueChunk cur;
  for (std::uint64_t i = first; i < n; ++i) {
    const std::uint64_t in_w = 4 + words_of(queue.payload(i).size());
    const std::uint64_t out_w = 2 + words_of(queue_out_capacity(queue, i, limits));
    if (in_w > limit || out_w + guard > limit)
      fail(ErrorCategory::invalid_argument,
           "item id " + std::to_string(queue.id(i)) + " (position " + std::to_string(i) + ") needs " +
               std::to_string(std::max(in_w, out_w + guard) * 4) + " bytes of one buffer (its payload is " +
               std::to_string(queue.payload(i).size()) + " bytes, its output capacity " +
               std::to_string(queue_out_capacity(queue, i, limits)) + "), more than " + device_id +
               " allows in one buffer (" + std::to_string(limit * 4) + " bytes).",
           "split that payload over several items, or lower QueueConfig::output_bytes.");
    if (cur.count > 0 && (cur.in_words + in_w > limit || cur.out_words + out_w > limit)) {
      chunks.push_back(std::move(cur));
      cur = QueueChunk{};
    }
    if (cur.count == 0) {
      cur.first = i;
      cur.out_words = guard;
    }
    ++cur.count;
    cur.in_words += in_w;
    cur.out_words += out_w;
  }
  if (cur.count > 0) chunks.push_back(std::move(cur));
  const std::uint64_t per_launch = std::max<std::uint64_t>(limits.max_items_per_launch, 1);
  for (QueueChunk& c : chunks)
    for (std::uint64_t base = 0; base < c.count; base += per_launch) {
      const QueueLaunch l{static_cast<std::uint32_t>(base),
                          static_cast<std::uint32_t>(std::min(per_launch, c.count - base))};
      c.launches.push_back(l);
      c.lanes.push_back(launch_lanes(queue, c.first + l.item_base, l.item_count, limits, device_id));
    }
  return chunks;
}

void pack_queue_chunk(const PersistentQueue& queue, const QueueChunk& chunk, const QueueLimits& limits,
                      std::vector<std::uint32_t>& words) {
  words.resize(chunk.in_words);
  const std::uint64_t guard = 2ull * limits.guard_entries;
  std::uint64_t in_at = 4 * chunk.count;           // payloads follow the entries
  std::uint64_t out_at = 2 * chunk.count + guard;  // output areas follow the results and the guard
  for (std::uint64_t j = 0; j < chunk.count; ++j) {
    const std::size_t i = static_cast<std::size_t>(chunk.first + j);
    const std::span<const std::byte> p = queue.payload(i);
    const std::uint32_t cap = queue_out_capacity(queue, i, limits);
    std::uint32_t* e = &words[4 * j];
    e[0] = static_cast<std::uint32_t>(in_at);
    e[1] = static_cast<std::uint32_t>(p.size());
    e[2] = static_cast<std::uint32_t>(out_at);
    e[3] = cap;
    const std::uint64_t w = words_of(p.size());
    if (w > 0) {
      words[in_at + w - 1] = 0;  // the padding of the last word is zero
      std::memcpy(&words[in_at], p.data(), p.size());
    }
    in_at += w;
    out_at += words_of(cap);
  }
}

}  // namespace vgpu::detail
