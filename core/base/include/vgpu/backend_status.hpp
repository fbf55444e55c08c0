// SPDX-License-Identifier: Apache-2.0
// vgpu/backend_status.hpp — whether a backend can run here (Runtime::backends()).
#pragma once

#include "vgpu/export.hpp"

#include <string>

#include "vgpu/types.hpp"

namespace vgpu {

/// Whether a backend can run here, and why not. A plain value.
struct VGPU_API BackendStatus {
  BackendKind kind = BackendKind::cpu;
  bool compiled_in = false;  ///< built with this backend (VGPU_WITH_*)
  bool available = false;    ///< its runtime and at least one device were found
  std::string reason;        ///< why it is unavailable (empty when available)
};

}  // namespace vgpu
