// core/src/timeout.hpp — reading VGPU_TIMEOUT_MS. Kept to one small function in its own file so
// it can move into the one configuration module for every VGPU_* variable.
#pragma once

#include <chrono>
#include <optional>
#include <string_view>

namespace vgpu::detail {

/// The largest VGPU_TIMEOUT_MS accepted: 10^12 ms (about 31 years; larger values are typos).
inline constexpr std::chrono::milliseconds kMaxTimeout{1'000'000'000'000};

/// Parses a VGPU_TIMEOUT_MS value: decimal digits only (no sign, spaces or units), at most
/// kMaxTimeout; returns nothing for anything else.
std::optional<std::chrono::milliseconds> parse_timeout_ms(std::string_view text) noexcept;

}  // namespace vgpu::detail
