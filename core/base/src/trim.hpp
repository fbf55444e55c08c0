// SPDX-License-Identifier: Apache-2.0
// core/base/src/trim.hpp — the base layer's one way to drop surrounding white space (the
// configuration reader and the platform layer's CPU readers use it). Internal to the base layer.
#pragma once

#include <cctype>
#include <string_view>

namespace vgpu::detail {

/// Returns s without leading and trailing white space (std::isspace in the C locale).
inline std::string_view trim(std::string_view s) noexcept {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

}  // namespace vgpu::detail
