// SPDX-License-Identifier: Apache-2.0
// core/base/src/params.cpp — runtime-checked construction of a params block.
#include "vgpu/params.hpp"

#include <string>

#include "vgpu/error.hpp"

namespace vgpu {

ParamsBlock::ParamsBlock(const void* data, std::size_t size) {
  if (size > kMaxParamsBytes)
    fail(ErrorCategory::invalid_argument,
         "params block of " + std::to_string(size) + " bytes exceeds the " + std::to_string(kMaxParamsBytes) +
             "-byte limit (the push-constant size every Vulkan device guarantees).",
         "pass large or variable-size arguments in a buffer binding instead.");
  if (size > 0 && data == nullptr)
    fail(ErrorCategory::invalid_argument, "params block of " + std::to_string(size) + " bytes from a null pointer.",
         "pass a pointer to the params struct, or size 0 for no params.");
  if (size > 0) std::memcpy(bytes_.data(), data, size);
  size_ = size;
}

}  // namespace vgpu
