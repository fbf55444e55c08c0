// SPDX-License-Identifier: Apache-2.0
// python/src/int_args.hpp — the one conversion every integer argument of the module goes
// through: a Python int (or an object with __index__, such as numpy.int64; never a bool)
// checked against the range its C++ parameter holds, so a value out of range raises
// vgpu.InvalidArgument with a Fix, never pybind11's RuntimeError or TypeError. Call with the
// GIL held.
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <limits>
#include <string_view>

namespace vgpu::python {

/// Returns obj as an unsigned integer in [min, max]; throws InvalidArgument naming what, the
/// value and the range when obj is not an integer or lies outside it.
std::uint64_t uint_arg(pybind11::handle obj, std::string_view what, std::uint64_t min = 0,
                       std::uint64_t max = std::numeric_limits<std::uint64_t>::max());

/// Returns obj as a signed integer in [min, max]; throws as uint_arg.
std::int64_t int_arg(pybind11::handle obj, std::string_view what, std::int64_t min, std::int64_t max);

/// Returns obj, a Python int or float (or numpy scalar; not a bool), as a double: an int past a
/// double's range reads as ±infinity (callers range-check). Throws InvalidArgument naming what
/// when obj is no number.
double number_arg(pybind11::handle obj, std::string_view what);

/// uint_arg for a 32-bit parameter: [min, 4294967295].
inline std::uint32_t u32_arg(pybind11::handle obj, std::string_view what, std::uint32_t min = 0) {
  return static_cast<std::uint32_t>(uint_arg(obj, what, min, std::numeric_limits<std::uint32_t>::max()));
}

}  // namespace vgpu::python
