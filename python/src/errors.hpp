// SPDX-License-Identifier: Apache-2.0
// python/src/errors.hpp — how the module raises: every failure is a vgpu::Error (thrown with
// vgpu::fail, in C++), which the translator bind_errors() installs turns into the vgpu.Error
// subclass of its category, with .category, .problem and .fix set.
#pragma once

#include <pybind11/pybind11.h>

#include "vgpu/error.hpp"

namespace vgpu::python {

/// Returns the Python exception class (vgpu.InvalidArgument, ...) that reports category.
pybind11::handle exception_class(ErrorCategory category);
/// Sets the Python error indicator from e (the instance of its category's class).
void raise_error(const Error& e);

}  // namespace vgpu::python
