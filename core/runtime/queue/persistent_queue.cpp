// SPDX-License-Identifier: Apache-2.0
// core/runtime/queue/persistent_queue.cpp — the host-side container of queue work items.
#include "vgpu/persistent_queue.hpp"

#include <algorithm>
#include <new>
#include <string>

#include "vgpu/error.hpp"

namespace vgpu {

namespace {

// The longest payload: its length must fit the ABI's 32-bit in_bytes once padded to words.
constexpr std::uint64_t kMaxPayloadBytes = 0xFFFFFFFFull - 3;

// Makes room for n elements in v, doubling its capacity (reserve(n) alone would grow it by one
// element per push).
template <class T>
void grow(std::vector<T>& v, std::size_t n) {
  if (n > v.capacity()) v.reserve(std::max(n, v.capacity() * 2));
}

}  // namespace

PersistentQueue::PersistentQueue(std::uint64_t max_items) : max_items_(max_items) {
  if (max_items == 0 || max_items > kMaxItems)
    fail(ErrorCategory::invalid_argument,
         "a PersistentQueue of " + std::to_string(max_items) + " items was asked for; it holds 1 to " +
             std::to_string(kMaxItems) + " (item indices are 32-bit on the device).",
         "shard work into multiple queues of at most PersistentQueue::kMaxItems items.");
  starts_.push_back(0);
}

void PersistentQueue::push(std::uint64_t id, std::span<const std::byte> payload) {
  if (ids_.size() >= max_items_)
    fail(ErrorCategory::invalid_argument,
         "the queue is full: it holds " + std::to_string(ids_.size()) + " items, its maximum (item id " +
             std::to_string(id) + " was not added).",
         "shard work into multiple queues (or make this one with a larger max_items, up to kMaxItems).");
  if (payload.size() > kMaxPayloadBytes)
    fail(ErrorCategory::invalid_argument,
         "item id " + std::to_string(id) + " has a payload of " + std::to_string(payload.size()) +
             " bytes; a queue item holds at most " + std::to_string(kMaxPayloadBytes) + ".",
         "split the payload over several items.");
  if (seen_.count(id) != 0)
    fail(ErrorCategory::invalid_argument, "item id " + std::to_string(id) + " is already in the queue.",
         "give every item of one queue its own id (results are returned by id).");
  try {
    // Grow everything first (geometrically) so that a failed allocation leaves the queue as it was.
    grow(ids_, ids_.size() + 1);
    grow(starts_, starts_.size() + 1);
    grow(bytes_, bytes_.size() + payload.size());
    seen_.insert(id);  // last: nothing after it can throw
  } catch (const std::bad_alloc&) {
    fail(ErrorCategory::out_of_memory,
         "no host memory for item id " + std::to_string(id) + " (" + std::to_string(payload.size()) +
             " bytes) in a queue of " + std::to_string(ids_.size()) + " items.",
         "split the queue into smaller ones and run them one after another.");
  }
  bytes_.insert(bytes_.end(), payload.begin(), payload.end());
  ids_.push_back(id);
  starts_.push_back(bytes_.size());
}

void PersistentQueue::clear() noexcept {
  ids_.clear();
  bytes_.clear();
  starts_.assign(1, 0);
  seen_.clear();
}

std::span<const std::byte> PersistentQueue::payload(std::size_t i) const {
  if (i >= ids_.size())
    fail(ErrorCategory::invalid_argument,
         "item " + std::to_string(i) + " of a queue of " + std::to_string(ids_.size()) + " items was asked for.",
         "ask for items 0 to size() - 1.");
  return std::span<const std::byte>(bytes_.data() + starts_[i], starts_[i + 1] - starts_[i]);
}

void QueueResult::check_size(std::size_t bytes) const {
  if (payload.size() < bytes)
    fail(ErrorCategory::invalid_argument,
         "the result of item id " + std::to_string(id) + " has " + std::to_string(payload.size()) +
             " bytes, fewer than the " + std::to_string(bytes) + " asked for.",
         "read results as a type no larger than the bytes the kernel wrote (QueueResult::payload.size()).");
}

QueueReport::QueueReport(const QueueReport& other)
    : kernel_launches(other.kernel_launches),
      round_trips(other.round_trips),
      results(other.results),
      storage(other.storage) {
  for (QueueResult& r : results)
    if (!r.payload.empty())
      r.payload =
          std::span<const std::byte>(storage.data() + (r.payload.data() - other.storage.data()), r.payload.size());
}

QueueReport& QueueReport::operator=(const QueueReport& other) {
  if (this != &other) *this = QueueReport(other);
  return *this;
}

}  // namespace vgpu
