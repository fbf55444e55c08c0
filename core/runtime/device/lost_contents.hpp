// SPDX-License-Identifier: Apache-2.0
// core/runtime/device/lost_contents.hpp — the byte ranges of a buffer that lost their contents with the
// device and have not been written since (in-place recovery, device_core.hpp).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace vgpu::detail {

/// The ranges of one buffer not written since its device was lost: sorted, disjoint, never
/// empty ranges. Empty: the buffer's contents are valid. A plain value; the owner guards it
/// (BufferState: the device's call lock).
class LostContents {
 public:
  /// Marks the whole of a bytes-long buffer lost.
  void lose_all(std::uint64_t bytes);
  /// Returns true when every byte is valid (nothing lost, or all written again).
  bool empty() const noexcept { return ranges_.empty(); }
  /// Returns true when [offset, offset + bytes) holds a lost byte.
  bool overlaps(std::uint64_t offset, std::uint64_t bytes) const noexcept;
  /// Marks [offset, offset + bytes) valid again (it was written).
  void cover(std::uint64_t offset, std::uint64_t bytes);
  /// Returns the number of bytes still lost.
  std::uint64_t lost_bytes() const noexcept;

 private:
  std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges_;  // [begin, end)
};

}  // namespace vgpu::detail
