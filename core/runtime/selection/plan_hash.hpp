// SPDX-License-Identifier: Apache-2.0
// core/runtime/selection/plan_hash.hpp — the content hash of a KernelPlan: what KernelDatabase finds a
// varying factory's kernel by, and what a persisted selection of a user's op is checked
// against (a changed kernel source or plan makes the stored choice stale).
// Thread-safety: a pure function.
#pragma once

#include <cstdint>
#include <string>

#include "vgpu/kernel_plan.hpp"

namespace vgpu::detail {

/// Returns the xxHash3 of id, shape and every field of plan that decides what its kernels are
/// and do: sources per dialect, specialisation, tensors, bindings and steps.
std::uint64_t plan_content_hash(const std::string& id, const Shape& shape, const KernelPlan& plan);

/// Returns the xxHash3 of plan's kernel sources only (names, every dialect's code, entry,
/// version and CPU callable type), not of its shapes or specialisation: what identifies a
/// user's op across the shapes of a size class (a persisted selection's key holds it).
std::uint64_t plan_source_hash(const KernelPlan& plan);

}  // namespace vgpu::detail
