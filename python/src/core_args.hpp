// SPDX-License-Identifier: Apache-2.0
// python/src/core_args.hpp — argument helpers shared by devices.cpp and cache.cpp: shapes given
// as an int or a sequence, devices given as None / Device / DeviceInfo / "backend:index", and
// counters as a dict. Header-only; call with the GIL held (they release it themselves around
// opening a device).
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>

#include "int_args.hpp"
#include "vgpu/counters.hpp"
#include "vgpu/device.hpp"
#include "vgpu/error.hpp"
#include "vgpu/runtime.hpp"
#include "vgpu/types.hpp"

namespace vgpu::python {

/// Returns shape as a vgpu Shape: an int N means N×N×N for matmul, N×N for softmax_rows and
/// {N} for every other op; a tuple or list is taken as it is. Throws InvalidArgument otherwise.
inline Shape op_shape_arg(const std::string& op, pybind11::handle shape) {
  namespace py = pybind11;
  const auto dim = [&](py::handle h) -> std::uint64_t {
    return uint_arg(h, "shape " + py::repr(shape).cast<std::string>() + "'s entry");
  };
  if (py::isinstance<py::int_>(shape) || (!py::isinstance<py::sequence>(shape) && py::hasattr(shape, "__index__"))) {
    const std::uint64_t n = dim(shape);
    if (op == "matmul") return {n, n, n};
    if (op == "softmax_rows") return {n, n};
    return {n};
  }
  if (py::isinstance<py::str>(shape) || !py::isinstance<py::sequence>(shape))
    fail(ErrorCategory::invalid_argument,
         "shape is " + py::repr(shape).cast<std::string>() + ", neither an int nor a sequence of ints.",
         "Pass an int N (matmul: N×N×N) or a tuple such as (M, K, N).");
  Shape out;
  for (py::handle h : py::reinterpret_borrow<py::sequence>(shape)) out.push_back(dim(h));
  return out;
}

/// Returns a snapshot as a dict {"compiles": ..., "l1_hits": ..., ...} (every field).
inline pybind11::dict counters_dict(const CounterSnapshot& c) {
  pybind11::dict d;
  d["compiles"] = c.compiles;
  d["l1_hits"] = c.l1_hits;
  d["l1_misses"] = c.l1_misses;
  d["l1_evictions"] = c.l1_evictions;
  d["persistent_evictions"] = c.persistent_evictions;
  d["binds"] = c.binds;
  d["allocations"] = c.allocations;
  d["allocated_bytes"] = c.allocated_bytes;
  d["freed_bytes"] = c.freed_bytes;
  d["dispatches"] = c.dispatches;
  d["submits"] = c.submits;
  d["bytes_up"] = c.bytes_up;
  d["bytes_down"] = c.bytes_down;
  d["source_compiles"] = c.source_compiles;
  d["l2_hits"] = c.l2_hits;
  d["l2_misses"] = c.l2_misses;
  d["l2_writes"] = c.l2_writes;
  d["l2_rejected"] = c.l2_rejected;
  d["l3_hits"] = c.l3_hits;
  d["pipeline_builds"] = c.pipeline_builds;
  d["device_losses"] = c.device_losses;
  d["recoveries"] = c.recoveries;
  d["variant_measurements"] = c.variant_measurements;
  d["variant_loads"] = c.variant_loads;
  d["timed_dispatches"] = c.timed_dispatches;
  d["device_ns"] = c.device_ns;
  return d;
}

}  // namespace vgpu::python
