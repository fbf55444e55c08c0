// SPDX-License-Identifier: Apache-2.0
// python/src/array_interop.hpp — vgpu.Array and host data: numpy arrays wrapped (in place on a
// device that uses host memory, else copied), DLPack capsules exported and imported, dtype
// arguments, and numpy's matmul dtype rule. Call with the GIL held.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <optional>
#include <string_view>

#include "vgpu/array.hpp"
#include "vgpu/ops.hpp"

namespace vgpu::python {

/// Whether wrapping host data may, must or must not copy it (numpy's asarray copy= argument).
enum class CopyMode { if_needed, always, never };

/// Returns the vgpu dtype obj names: a numpy dtype or type, or a string ("float32", "f32",
/// "bfloat16"); throws InvalidArgument naming what.
DType dtype_arg(pybind11::handle obj, std::string_view what);
/// Returns d as Python sees it: a numpy dtype, or the string "bfloat16" (numpy has none).
pybind11::object dtype_object(DType d);

/// Returns obj (a numpy array or array-like) as an Array on device, of dtype when given (else
/// the array's own): numpy's memory itself where the device uses host memory and the array is
/// C-contiguous, aligned and writeable (the Array keeps it alive), else a copy. what names it.
Array host_array(pybind11::handle obj, const Device& device, std::optional<DType> dtype, CopyMode copy,
                 std::string_view what);
/// Returns obj as an Array: itself when it is one (on device when given, else refused), an
/// imported DLPack tensor for an object with __dlpack__ that is not a numpy array, else host_array.
Array array_arg(pybind11::handle obj, std::optional<Device> device, std::optional<DType> dtype, CopyMode copy,
                std::string_view what);
/// Waits for the work queued on a's device, so that code outside vgpu (numpy, a DLPack or CUDA
/// array interface consumer) reads a's final values; nothing on the CPU device, whose calls
/// finish before they return. Releases the GIL while waiting.
void settle(const Array& a);
/// Returns a numpy array over a (a view of its memory when it is host memory, after its
/// device's work on it has run; else a copy); bits: of host_dtype (uint16 bit patterns for bf16).
pybind11::array numpy_of(const Array& a, bool bits);

/// Returns the Array a DLPack exporter obj (anything with __dlpack__, or a "dltensor" capsule)
/// hands over, zero-copy; throws InvalidArgument / NotSupported with a Fix when it cannot.
Array from_dlpack(pybind11::handle obj, std::optional<Device> device);
/// Returns a capsule exporting a (host memory or CUDA memory), zero-copy: a DLPack 1.0
/// "dltensor_versioned" one when versioned (copied sets its IS_COPIED flag), else "dltensor".
pybind11::capsule to_dlpack(const Array& a, bool versioned, bool copied);

/// The dtype a matmul computes on: numpy's result dtype (vgpu's promote_types for two vgpu
/// dtypes, bfloat16 included) when it is float32, float16 or bfloat16, or the dtype cast names
/// (the opt-in, one of those three); otherwise throws NotSupported naming numpy's result dtype.
DType matmul_compute_dtype(pybind11::handle a, pybind11::handle b, pybind11::handle cast, std::string_view op);

/// Returns the numpy array a host matmul writes its result of shape and dtype into: out (a
/// writeable, C-contiguous array of host_dtype(dtype) and exactly that shape, else
/// InvalidArgument naming op) or a new one.
pybind11::array matmul_output(pybind11::handle out, const Shape& shape, DType dtype, const char* op);
/// np.matmul of a and b (vgpu.matmul): on the device of a vgpu.Array operand, returning an
/// Array (or writing out, an Array); else on device (default device when empty), returning a
/// numpy array (out, or a new one). dtype: None or the float32 opt-in; op names the caller;
/// precision: ops::Precision (TF32 allowed or not).
pybind11::object matmul_any(pybind11::handle a, pybind11::handle b, pybind11::handle out, pybind11::handle dtype,
                            std::optional<Device> device, const char* op,
                            ops::Precision precision = ops::Precision::highest);
/// Returns the matmul precision a precision= argument names: "highest" (and None) or "tf32";
/// InvalidArgument with a Fix for another value or type.
ops::Precision precision_arg(pybind11::handle precision);

}  // namespace vgpu::python
