// SPDX-License-Identifier: Apache-2.0
// core/runtime/device/reflected_bindings.hpp — a kernel's binding declarations derived from, or checked
// against, what its backend reflected from the compiled form (KernelImpl::reflection()).
#pragma once

#include "vgpu/device_info.hpp"
#include "vgpu/kernel_source.hpp"
#include "vgpu/specialization.hpp"

namespace vgpu::detail {

/// Makes source's bindings and params_size those dispatches are checked against: derived from
/// reflection when source declares no bindings (and params_size 0 takes the push-constant
/// block's size), else checked against it. Also checks a set workgroup_size against the
/// reflected local size. Throws invalid_argument naming the slot on a mismatch.
/// Thread-safety: a pure function of its arguments.
void apply_reflection(KernelSource& source, const CompileOptions& options, const KernelReflection& reflection,
                      const DeviceInfo& device);

}  // namespace vgpu::detail
