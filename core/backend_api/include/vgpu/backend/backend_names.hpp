// SPDX-License-Identifier: Apache-2.0
// vgpu/backend/backend_names.hpp — naming a backend that is not one of vgpu's own four.
// Backend-author interface.
#pragma once

#include <string_view>

#include "vgpu/types.hpp"

namespace vgpu {

/// Registers name for kind, so to_string/parse_backend_kind, VGPU_BACKEND and device ids know it.
/// Runtime calls it for every backend it is given; registering the same pair again is a no-op.
/// Throws invalid_argument when the kind or the name is taken by another backend. Thread-safe.
void register_backend_name(BackendKind kind, std::string_view name);

}  // namespace vgpu
