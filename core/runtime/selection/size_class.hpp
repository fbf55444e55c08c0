// SPDX-License-Identifier: Apache-2.0
// core/runtime/selection/size_class.hpp — the size class of a call, computed here and nowhere else: device
// selections are made, stored and demoted per (op, size class), so every place that names a
// class must agree on it.
// Thread-safety: pure functions, safe from any number of threads.
#pragma once

#include <bit>
#include <cstdint>
#include <string>

#include "vgpu/selection.hpp"

namespace vgpu::detail {

/// Returns ceil(log2(work)) (0 for work 1): work within a factor of two shares one class.
inline std::uint32_t size_class_of_work(std::uint64_t work) noexcept {
  return static_cast<std::uint32_t>(std::bit_width(work - 1));
}

/// Returns op's size class at shape; throws invalid_argument for a malformed op or shape
/// (selection_work's checks).
inline std::uint32_t size_class(const std::string& op, const Shape& shape) {
  return size_class_of_work(selection_work(op, shape));
}

}  // namespace vgpu::detail
