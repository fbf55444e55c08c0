// SPDX-License-Identifier: Apache-2.0
// core/runtime/device/registry.hpp — the explicit, ordered list of compiled-in backends.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "vgpu/backend/compute_backend.hpp"
#include "vgpu/backend/backend_settings.hpp"
#include "vgpu/backend/device_impl.hpp"

namespace vgpu::detail {

/// Every backend kind vgpu knows, in registry (preference) order, CPU last.
std::vector<BackendKind> known_backends();
/// Creates the compiled-in backends in registry order (CPU last), each with settings (one
/// runtime's); throws invalid_argument when a backend refuses them (an unknown CPU ISA in code).
std::vector<std::unique_ptr<ComputeBackend>> make_compiled_backends(
    const std::shared_ptr<const BackendSettings>& settings);
/// Returns the rule by which backends of kind run the built-in ops (what the DeviceInfo forms
/// of vgpu::ops use): for vgpu's own, the one its registry entry names (with
/// VGPU_MATMUL_TILING applied); for any other, the op_tuner() of the first backend of that kind
/// a Runtime was given in this process (remember_op_tuner); null when there is none.
std::shared_ptr<const OpTuner> registered_op_tuner(BackendKind kind);
/// Records backend's op_tuner() as its kind's rule when vgpu does not register the kind and no
/// backend of that kind brought one before (a kind is one backend: BackendKind::named). Called
/// for each backend a Runtime is given. Thread-safety: any thread.
void remember_op_tuner(const ComputeBackend& backend);
/// Returns backend's own tuner (ComputeBackend::op_tuner: vgpu's backends return their rule,
/// wrappers their inner backend's) or else the one registered for its kind; null when neither
/// exists (its devices run no built-in ops).
std::shared_ptr<const OpTuner> op_tuner_of(const ComputeBackend& backend);
/// Returns the backend whose devices' memory is space to other code (host memory: the CPU
/// backend; CUDA device memory: the CUDA backend), or nothing for none.
std::optional<BackendKind> backend_for_memory(BufferAddress::Space space);
/// Returns the memory space of kind's buffers as other code sees it (backend_for_memory's
/// inverse): none for a backend vgpu does not register or whose memory only it reaches.
BufferAddress::Space memory_of(BackendKind kind);
/// Returns the CMake option that controls a backend, e.g. "VGPU_WITH_VULKAN".
const char* build_option(BackendKind kind);

}  // namespace vgpu::detail
