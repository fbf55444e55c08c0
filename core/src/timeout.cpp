// core/src/timeout.cpp — the limit every device starts with (VGPU_TIMEOUT_MS, read and
// validated by vgpu::Config like every VGPU_* variable).
#include "vgpu/backend/deadline.hpp"
#include "vgpu/config.hpp"

namespace vgpu {

std::chrono::milliseconds configured_timeout() { return Config::from_env().timeout; }

}  // namespace vgpu
