// core/src/timeout.cpp — VGPU_TIMEOUT_MS: the limit every device starts with.
#include "timeout.hpp"

#include <cstdlib>
#include <mutex>
#include <set>
#include <string>

#include "vgpu/backend/deadline.hpp"
#include "vgpu/log.hpp"

namespace vgpu {
namespace detail {

std::optional<std::chrono::milliseconds> parse_timeout_ms(std::string_view text) noexcept {
  if (text.empty() || text.size() > 13) return std::nullopt;
  std::int64_t ms = 0;
  for (const char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    ms = ms * 10 + (c - '0');  // 13 digits cannot overflow
  }
  if (ms > kMaxTimeout.count()) return std::nullopt;
  return std::chrono::milliseconds(ms);
}

}  // namespace detail

std::chrono::milliseconds configured_timeout() {
  const char* v = std::getenv("VGPU_TIMEOUT_MS");
  if (v == nullptr) return kDefaultTimeout;
  if (const auto ms = detail::parse_timeout_ms(v)) return *ms;
  // Every device open reads the variable: say so once per bad value, not once per device.
  static std::mutex mutex;
  static std::set<std::string> warned;
  std::lock_guard lock(mutex);
  if (warned.insert(v).second)
    log(LogLevel::warn, "ignoring VGPU_TIMEOUT_MS='" + std::string(v) +
                            "' (not a whole number of milliseconds from 0 to " +
                            std::to_string(detail::kMaxTimeout.count()) + "); using the default " +
                            std::to_string(kDefaultTimeout.count()) +
                            " ms. Fix: set VGPU_TIMEOUT_MS to digits only, e.g. 60000 (0 = no limit), or unset it.");
  return kDefaultTimeout;
}

}  // namespace vgpu
