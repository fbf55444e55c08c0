// SPDX-License-Identifier: Apache-2.0
// core/runtime/device/lost_contents.cpp — range bookkeeping of a buffer's lost contents.
#include "lost_contents.hpp"

namespace vgpu::detail {

void LostContents::lose_all(std::uint64_t bytes) {
  ranges_.clear();
  if (bytes) ranges_.emplace_back(0, bytes);
}

bool LostContents::overlaps(std::uint64_t offset, std::uint64_t bytes) const noexcept {
  const std::uint64_t end = offset + bytes;
  for (const auto& [b, e] : ranges_)
    if (b < end && offset < e) return true;
  return false;
}

void LostContents::cover(std::uint64_t offset, std::uint64_t bytes) {
  if (ranges_.empty() || bytes == 0) return;
  const std::uint64_t end = offset + bytes;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> kept;
  kept.reserve(ranges_.size() + 1);
  for (const auto& [b, e] : ranges_) {
    if (e <= offset || end <= b) {  // untouched
      kept.emplace_back(b, e);
      continue;
    }
    if (b < offset) kept.emplace_back(b, offset);  // the part before the write
    if (end < e) kept.emplace_back(end, e);        // the part after it
  }
  ranges_.swap(kept);
}

std::uint64_t LostContents::lost_bytes() const noexcept {
  std::uint64_t n = 0;
  for (const auto& [b, e] : ranges_) n += e - b;
  return n;
}

}  // namespace vgpu::detail
