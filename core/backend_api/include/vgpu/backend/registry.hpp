// SPDX-License-Identifier: Apache-2.0
// vgpu/backend/registry.hpp — the CPU backend's factory, which tests and wrapping backends call.
// Backend-author interface. Every backend defines a factory of this form; core/runtime/device/registry.cpp
// declares the others and lists them all, in preference order (CPU last). A Runtime makes its own
// backends, with its settings (null: BackendSettings::process()); the backend hands them to
// every device it opens.
#pragma once

#include <memory>

#include "vgpu/backend/compute_backend.hpp"
#include "vgpu/backend/backend_settings.hpp"

namespace vgpu {

/// Creates the CPU fallback backend (always built); throws invalid_argument when settings name
/// an unknown instruction set in code (BackendSettings::cpu_isa_from_code).
std::unique_ptr<ComputeBackend> make_cpu_backend(std::shared_ptr<const BackendSettings> settings = nullptr);

}  // namespace vgpu
