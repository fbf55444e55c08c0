// SPDX-License-Identifier: Apache-2.0
// python/src/device_arg.hpp — the one place a Python value becomes a vgpu::Device and back:
// None (the caller's default), a "backend:index" string (Runtime::global().open), a vgpu.Device
// or a vgpu.DeviceInfo (bound in devices.cpp).
// Call with the GIL held; opening a device releases it meanwhile.
#pragma once

#include <pybind11/pybind11.h>

#include <string_view>

#include "vgpu/device.hpp"
#include "vgpu/kernel_source.hpp"

namespace vgpu::python {

/// Returns obj as a device: a vgpu.Device, or a vgpu.DeviceInfo or "backend:index" id opened
/// through Runtime::global(); None gives an empty Device (the caller picks its default: measured
/// selection, the default device, ...). Anything else is InvalidArgument naming what.
Device device_arg(pybind11::handle obj, std::string_view what = "device");
/// Returns the device a kernel with source runs on when the caller named none:
/// Runtime::global().default_device() when it takes one of source's dialects, else the first
/// device in registry order that does (a CPU callable: the CPU device); Unavailable when none.
Device default_device_for(const KernelSource& source);
/// Returns device as a vgpu.Device.
pybind11::object device_object(const Device& device);

}  // namespace vgpu::python
