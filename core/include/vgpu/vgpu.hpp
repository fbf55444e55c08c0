// SPDX-License-Identifier: Apache-2.0
// vgpu/vgpu.hpp — the whole public API in one include.
#pragma once

#include "vgpu/backend_status.hpp"
#include "vgpu/cache.hpp"
#include "vgpu/config.hpp"
#include "vgpu/counters.hpp"
#include "vgpu/device.hpp"
#include "vgpu/device_info.hpp"
#include "vgpu/error.hpp"
#include "vgpu/kernel_database.hpp"
#include "vgpu/kernel_plan.hpp"
#include "vgpu/kernel_source.hpp"
#include "vgpu/log.hpp"
#include "vgpu/ops.hpp"
#include "vgpu/params.hpp"
#include "vgpu/persistent_kernel.hpp"
#include "vgpu/persistent_queue.hpp"
#include "vgpu/queue_kernels.hpp"
#include "vgpu/runtime.hpp"
#include "vgpu/selection.hpp"
#include "vgpu/types.hpp"
#include "vgpu/version.hpp"
