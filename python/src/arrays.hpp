// SPDX-License-Identifier: Apache-2.0
// python/src/arrays.hpp — numpy arrays in and out of vgpu calls, with one set of rules:
//   inputs:  a C-contiguous array of the kernel's dtype is used in place (no copy); any other
//            real numeric array or array-like (float64, float16, int, uint; non-contiguous or
//            not an ndarray) is converted once to a C-contiguous array of that dtype. bool,
//            complex, object, string and datetime dtypes are refused (InvalidArgument).
//   outputs: must be a writeable, C-contiguous numpy array of exactly the kernel's dtype
//            (vgpu writes into its memory); anything else is refused, nothing is converted.
//   bfloat16: numpy has none, so bf16 host data travels as its bit patterns in uint16 arrays
//            (host_dtype): a uint16 input is those bits (used in place); any other numeric
//            input is read as float32 and rounded to nearest even; outputs are uint16 arrays.
// Every refusal is a vgpu::Error (InvalidArgument in Python) naming the argument and ending in
// a Fix. Call these with the GIL held.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <optional>
#include <string_view>

#include "vgpu/types.hpp"

namespace vgpu::python {

/// Returns the name of a dtype as numpy spells it ("float32", "int32", "uint32", …).
const char* np_name(DType d);
/// Returns the numpy dtype that holds vgpu dtype d; throws InvalidArgument for bf16 (numpy has none).
pybind11::dtype numpy_dtype(DType d);
/// Returns the numpy dtype host data of vgpu dtype d travels in: numpy_dtype(d), and uint16 for
/// bf16 (its bit patterns: numpy has no bfloat16).
pybind11::dtype host_dtype(DType d);
/// Returns the vgpu dtype of a native-byte-order numpy dtype, or nothing when vgpu has none.
std::optional<DType> find_vgpu_dtype(const pybind11::dtype& dt);
/// Returns the vgpu dtype of a numpy dtype, or throws InvalidArgument naming what.
DType vgpu_dtype(const pybind11::dtype& dt, std::string_view what);
/// Returns obj as a C-contiguous array of dtype d: obj itself when it already is one, else one
/// converted copy (see the rules above); what names the argument in errors ("A", "argument 2").
pybind11::array input_array(pybind11::handle obj, DType d, std::string_view what);
/// Returns obj as an output array of dtype d (checked, never copied; rules above).
pybind11::array output_array(pybind11::handle obj, DType d, std::string_view what);
/// Returns the array's shape as a vgpu Shape.
Shape shape_of(const pybind11::array& a);
/// Returns a new C-contiguous array of dtype d (host_dtype: uint16 bits for bf16) and the given
/// shape (uninitialised).
pybind11::array new_array(DType d, const Shape& shape);

}  // namespace vgpu::python
