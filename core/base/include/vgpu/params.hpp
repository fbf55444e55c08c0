// SPDX-License-Identifier: Apache-2.0
// vgpu/params.hpp — the small by-value parameter block every dispatch carries.
#pragma once

#include "vgpu/export.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace vgpu {

/// Bytes a params block may hold: the push-constant minimum guaranteed by Vulkan.
inline constexpr std::size_t kMaxParamsBytes = 128;

/// Up to 128 bytes of plain data passed by value to a kernel (push constants in Vulkan,
/// a storage block in GL, a by-value struct in CUDA, a pointer on the CPU). Keep members to
/// 4-byte scalars and 16-byte-aligned vectors so C, std430 and push-constant layouts agree.
/// Thread-safety: a plain value; copies are independent.
class VGPU_API ParamsBlock {
 public:
  ParamsBlock() = default;
  /// Copies size bytes from data; throws invalid_argument when size > 128 or data is null.
  ParamsBlock(const void* data, std::size_t size);

  /// Builds a block from a trivially copyable struct; oversize structs fail at compile time.
  template <class T>
  static ParamsBlock of(const T& value) {
    static_assert(std::is_trivially_copyable_v<T>, "params must be trivially copyable");
    static_assert(sizeof(T) <= kMaxParamsBytes, "params block is limited to 128 bytes");
    ParamsBlock block;
    std::memcpy(block.bytes_.data(), &value, sizeof(T));
    block.size_ = sizeof(T);
    return block;
  }

  /// Returns a pointer to the bytes (valid while the block lives).
  const void* data() const noexcept { return bytes_.data(); }
  /// Returns the number of meaningful bytes.
  std::size_t size() const noexcept { return size_; }
  /// Reinterprets the bytes as T; T must fit in size().
  template <class T>
  T as() const noexcept {
    T value{};
    std::memcpy(&value, bytes_.data(), sizeof(T) < size_ ? sizeof(T) : size_);
    return value;
  }

 private:
  alignas(16) std::array<std::byte, kMaxParamsBytes> bytes_{};
  std::size_t size_ = 0;
};

}  // namespace vgpu
