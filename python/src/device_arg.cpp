// SPDX-License-Identifier: Apache-2.0
// python/src/device_arg.cpp — Python values to vgpu::Device and back (see device_arg.hpp).
#include "device_arg.hpp"

#include <string>

#include "vgpu/error.hpp"
#include "vgpu/runtime.hpp"

namespace py = pybind11;

namespace vgpu::python {
namespace {

bool takes_any(const DeviceInfo& info, const KernelSource& source) {
  for (const DialectSource& s : source.sources)
    if (s.present())
      for (const std::string& d : info.dialects)
        if (d == s.dialect) return true;
  return false;
}

std::string dialect_list(const KernelSource& source) {
  std::string s;
  for (const DialectSource& d : source.sources)
    if (d.present()) s += (s.empty() ? "" : ", ") + d.dialect;
  return s.empty() ? "none" : s;
}

}  // namespace

Device device_arg(py::handle obj, std::string_view what) {
  if (obj.is_none()) return Device();
  if (py::isinstance<Device>(obj)) return obj.cast<Device>();
  if (py::isinstance<DeviceInfo>(obj)) {
    const DeviceInfo info = obj.cast<DeviceInfo>();
    py::gil_scoped_release release;
    return Runtime::global().open(info);
  }
  if (py::isinstance<py::str>(obj)) {
    const std::string id = obj.cast<std::string>();
    py::gil_scoped_release release;
    return Runtime::global().open(id);
  }
  fail(ErrorCategory::invalid_argument,
       std::string(what) + " is a " + py::str(obj.get_type().attr("__name__")).cast<std::string>() + ", not a device.",
       "Pass a vgpu.Device (vgpu.open()), a vgpu.DeviceInfo (vgpu.devices()), an id such as \"cpu:0\" or "
       "\"vulkan:0\", or None.");
}

Device default_device_for(const KernelSource& source) {
  py::gil_scoped_release release;
  Runtime& runtime = Runtime::global();
  Device fallback = runtime.default_device();
  if (fallback && takes_any(fallback.info(), source)) return fallback;
  for (const DeviceInfo& info : runtime.devices())
    if (takes_any(info, source)) return runtime.open(info);
  fail(ErrorCategory::unavailable,
       "no device on this machine takes kernel '" + source.name + "' (its dialects: " + dialect_list(source) + ").",
       "Add a dialect one of vgpu.devices() compiles (a cpu= callable runs on the CPU device), or pass device=.");
}

py::object device_object(const Device& device) { return py::cast(device); }

}  // namespace vgpu::python
