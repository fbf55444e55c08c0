// SPDX-License-Identifier: Apache-2.0
// python/src/devices.cpp — the devices side of the module: vgpu.Device, vgpu.DeviceInfo,
// vgpu.BackendStatus, vgpu.Selection and the functions over Runtime::global() (devices(),
// backends(), open(), default_device(), select(), explain(), counters(), ops()).
#include <pybind11/chrono.h>
#include <pybind11/stl.h>

#include <chrono>
#include <cstdio>
#include <limits>
#include <optional>
#include <string>

#include "array_interop.hpp"
#include "bindings.hpp"
#include "core_args.hpp"
#include "device_arg.hpp"
#include "int_args.hpp"
#include "vgpu/array.hpp"
#include "vgpu/backend_list.hpp"
#include "vgpu/backend_status.hpp"
#include "vgpu/device.hpp"
#include "vgpu/device_info.hpp"
#include "vgpu/inventory.hpp"
#include "vgpu/ops.hpp"
#include "vgpu/runtime.hpp"
#include "vgpu/selection.hpp"

namespace py = pybind11;

namespace vgpu::python {
namespace {

std::string repr_str(const std::string& s) { return py::repr(py::str(s)).cast<std::string>(); }

std::string shape_text(const Shape& s) {
  std::string out = "(";
  for (std::size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + (s.size() == 1 ? ",)" : ")");
}

py::tuple shape_tuple(const Shape& s) {
  py::tuple t(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) t[i] = py::int_(s[i]);
  return t;
}

py::dict limits_dict(const DeviceLimits& l) {
  py::dict d;
  d["max_workgroup_size"] = py::make_tuple(l.max_workgroup_size[0], l.max_workgroup_size[1], l.max_workgroup_size[2]);
  d["max_workgroup_invocations"] = l.max_workgroup_invocations;
  d["max_workgroup_count"] =
      py::make_tuple(l.max_workgroup_count[0], l.max_workgroup_count[1], l.max_workgroup_count[2]);
  d["max_shared_memory_bytes"] = l.max_shared_memory_bytes;
  d["max_buffer_bytes"] = l.max_buffer_bytes;
  d["max_bindings"] = l.max_bindings;
  d["max_loop_iterations"] = l.max_loop_iterations;
  return d;
}

/// Returns value, or None for DeviceInfo's "unknown" (0 or empty).
template <class T>
std::optional<T> known(const T& value) {
  if (value == T{}) return std::nullopt;
  return value;
}

// The docstring of a "backend" property: the backends known, as in "\"cuda\", ... or \"cpu\"".
const char* backend_doc() {
  static const std::string doc = [] {
    const std::vector<std::string> names = backend_names();
    std::string d = "The backend: ";
    for (std::size_t i = 0; i < names.size(); ++i)
      d += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + ("\"" + names[i] + "\"");
    return d + ".";
  }();
  return doc.c_str();
}

std::string info_repr(const DeviceInfo& i) {
  return "DeviceInfo(" + repr_str(i.id()) + ", " + repr_str(i.name) +
         ", type=" + repr_str(std::string(to_string(i.type))) + ")";
}

// The DeviceInfo attributes, shared by vgpu.DeviceInfo and vgpu.Device (which reads them from
// its info()).
template <class Class, class Get>
void add_info_properties(Class& c, Get get) {
  c.def_property_readonly(
      "id", [get](const typename Class::type& x) { return get(x).id(); },
      "\"backend:index\", the form VGPU_DEVICE and vgpu.open() accept.");
  c.def_property_readonly(
      "backend", [get](const typename Class::type& x) { return std::string(to_string(get(x).backend)); },
      backend_doc());
  c.def_property_readonly(
      "index", [get](const typename Class::type& x) { return get(x).index; },
      "Index within its backend, as in VGPU_DEVICE=vulkan:1.");
  c.def_property_readonly(
      "name", [get](const typename Class::type& x) { return get(x).name; }, "The device's name.");
  c.def_property_readonly(
      "vendor", [get](const typename Class::type& x) { return get(x).vendor; }, "The vendor.");
  c.def_property_readonly(
      "type", [get](const typename Class::type& x) { return std::string(to_string(get(x).type)); },
      "What sort of hardware it is: \"discrete_gpu\", \"integrated_gpu\", \"virtual_gpu\", "
      "\"software\", \"cpu\" or \"other\" (selection ranks by this, never by name).");
  c.def_property_readonly(
      "kind", [get](const typename Class::type& x) { return std::string(to_string(get(x).type)); }, "Same as type.");
  c.def_property_readonly(
      "driver_version", [get](const typename Class::type& x) { return get(x).driver_version; },
      "The driver's version.");
  c.def_property_readonly(
      "api_version", [get](const typename Class::type& x) { return get(x).api_version; }, "The compute API's version.");
  // Unknown values are None, as they are null in `python3 -m vgpu --json` and vgpu-probe's JSON.
  c.def_property_readonly(
      "memory_bytes", [get](const typename Class::type& x) { return known(get(x).memory_bytes); },
      "Device memory in bytes, or None when the driver does not tell.");
  c.def_property_readonly(
      "compute_units", [get](const typename Class::type& x) { return known(get(x).compute_units); },
      "Compute units (SMs, cores), or None when the driver does not tell.");
  c.def_property_readonly(
      "vendor_id", [get](const typename Class::type& x) { return get(x).vendor_id; },
      "PCI vendor id (on Vulkan maybe a Khronos id, 0x10005 = Mesa), or None when unknown.");
  c.def_property_readonly(
      "device_id", [get](const typename Class::type& x) { return get(x).device_id; },
      "PCI device id, or None when unknown.");
  c.def_property_readonly(
      "device_uuid", [get](const typename Class::type& x) { return known(get(x).device_uuid); },
      "The device UUID as 32 hex digits, or None when unknown.");
  c.def_property_readonly(
      "driver_uuid", [get](const typename Class::type& x) { return known(get(x).driver_uuid); },
      "The driver UUID as 32 hex digits, or None when unknown.");
  c.def_property_readonly(
      "subgroup_size", [get](const typename Class::type& x) { return get(x).subgroup_size; },
      "Subgroup (CUDA: warp) size, or None when unknown.");
  c.def_property_readonly(
      "limits", [get](const typename Class::type& x) { return limits_dict(get(x).limits); },
      "The compute limits validation and selection rely on, as a dict.");
  c.def_property_readonly(
      "features", [get](const typename Class::type& x) { return get(x).features; },
      "Optional features the device has.");
  c.def_property_readonly(
      "dialects", [get](const typename Class::type& x) { return get(x).dialects; },
      "Source dialects it compiles, preferred first.");
  c.def_property_readonly(
      "fingerprint", [get](const typename Class::type& x) { return get(x).fingerprint.hex(); },
      "The device + driver + cache format identity (16 hex digits) cache keys include.");
  c.def_property_readonly(
      "fingerprint_text", [get](const typename Class::type& x) { return get(x).fingerprint.text; },
      "The \"key=value;...\" text the fingerprint hashes.");
}

}  // namespace

void bind_devices(py::module_& m) {
  py::class_<BackendStatus>(m, "BackendStatus",
                            "Whether a backend can run here, and why not (vgpu.backends()). A plain value.")
      .def_property_readonly(
          "name", [](const BackendStatus& s) { return std::string(to_string(s.kind)); }, backend_doc())
      .def_readonly("compiled_in", &BackendStatus::compiled_in, "Built with this backend (VGPU_WITH_*).")
      .def_readonly("available", &BackendStatus::available, "Its runtime and at least one device were found.")
      .def_readonly("reason", &BackendStatus::reason, "Why it is unavailable (empty when available).")
      .def("__repr__", [](const BackendStatus& s) {
        return "BackendStatus(" + repr_str(std::string(to_string(s.kind))) +
               ", compiled_in=" + (s.compiled_in ? "True" : "False") +
               ", available=" + (s.available ? "True" : "False") +
               (s.reason.empty() ? "" : ", reason=" + repr_str(s.reason)) + ")";
      });

  py::class_<DeviceInfo> info(m, "DeviceInfo",
                              "Everything vgpu knows about one device (vgpu.devices()); vgpu.open(info) opens it. "
                              "A plain value; equal when the ids are.");
  add_info_properties(info, [](const DeviceInfo& i) -> const DeviceInfo& { return i; });
  info.def("__repr__", &info_repr)
      .def(
          "__eq__", [](const DeviceInfo& a, const DeviceInfo& b) { return a.id() == b.id(); }, py::is_operator())
      .def("__hash__", [](const DeviceInfo& i) { return py::hash(py::str(i.id())); });

  py::class_<Device> device(
      m, "Device",
      "An opened device (vgpu.open(), vgpu.default_device(), vgpu.select(), Cache.device): a shared handle; "
      "the device closes when the last handle (and everything built on it) goes. Every method is safe to "
      "call from several threads. A Device survives the loss of its device: the call that was in flight "
      "raises vgpu.DeviceLost (or vgpu.Timeout), lost is True until the next call, which recovers it in "
      "place. Equal (and hashed) by id.");
  add_info_properties(device, [](const Device& d) -> const DeviceInfo& { return d.info(); });
  device
      .def_property_readonly(
          "info", [](const Device& d) { return d.info(); },
          "The device's description (a vgpu.DeviceInfo), fingerprint included.")
      .def(
          "counters", [](const Device& d) { return counters_dict(d.counters()); },
          "Returns a copy of this device's counters as a dict (compiles, l1_hits, dispatches, ...).")
      .def_property_readonly(
          "uses_host_memory", [](const Device& d) { return Array::uses_host_memory(d); },
          "True when kernels and arrays on this device use host memory in place (the CPU device): numpy "
          "arrays are not copied, and persistent kernels hold no buffers for their tensors (docs/arrays.md).")
      .def_property(
          "timeout_ms", [](const Device& d) { return static_cast<long long>(d.timeout().count()); },
          [](Device& d, py::handle ms_arg) {
            const auto ms =
                std::chrono::milliseconds(int_arg(ms_arg, "timeout_ms", 0, std::numeric_limits<std::int64_t>::max()));
            py::gil_scoped_release release;
            d.set_timeout(ms);
          },
          "The limit in milliseconds of every call on this device that brings none of its own (0: no limit; "
          "VGPU_TIMEOUT_MS until set), for every handle of it; a call past it raises vgpu.Timeout. Setting a "
          "negative value raises vgpu.InvalidArgument.")
      .def_property_readonly("can_time_dispatches", &Device::can_time_dispatches,
                             "True when this device's dispatches can be timed by the device's own timer (Vulkan "
                             "timestamp queries, CUDA events, OpenGL timer queries, the CPU's steady clock).")
      .def_property(
          "device_timing", &Device::device_timing,
          [](Device& d, bool on) {
            py::gil_scoped_release release;
            d.set_device_timing(on);
          },
          "Whether dispatches recorded or submitted from now on are timed on the device (VGPU_DEVICE_TIMING=1 "
          "starts it on): counters() timed_dispatches and device_ns, dispatch_times(). Setting True where "
          "can_time_dispatches is False raises vgpu.NotSupported.")
      .def(
          "dispatch_times",
          [](const Device& d) {
            std::vector<vgpu::DispatchTime> times;
            {
              py::gil_scoped_release release;
              times = d.dispatch_times();
            }
            py::list out;
            for (const vgpu::DispatchTime& t : times) out.append(py::make_tuple(t.kernel, t.begin_ns, t.end_ns));
            return out;
          },
          "Returns the newest timed dispatches that have finished, oldest first, as (kernel, begin_ns, end_ns) "
          "tuples on the device's own clock (comparable with each other, not with time.monotonic()).")
      .def_property_readonly("lost", &Device::lost,
                             "True while the device is lost and not yet recovered: the next call on it recovers "
                             "it first.")
      .def(
          "synchronize",
          [](Device& d, py::object timeout_ms) {
            if (timeout_ms.is_none()) {
              py::gil_scoped_release release;
              d.synchronize();
            } else {
              const auto ms = std::chrono::milliseconds(
                  int_arg(timeout_ms, "timeout_ms", 0, std::numeric_limits<std::int64_t>::max()));
              py::gil_scoped_release release;
              d.synchronize(ms);
            }
          },
          py::arg("timeout_ms") = py::none(),
          "Waits until every submitted dispatch has finished, for at most timeout_ms (None: the device's "
          "timeout_ms; 0: no limit); raises vgpu.Timeout when it passes.")
      .def("__repr__",
           [](const Device& d) {
             return "Device(" + repr_str(d.info().id()) + ", " + repr_str(d.info().name) +
                    ", type=" + repr_str(std::string(to_string(d.info().type))) + ")";
           })
      .def(
          "__eq__", [](const Device& a, const Device& b) { return a.info().id() == b.info().id(); }, py::is_operator())
      .def("__hash__", [](const Device& d) { return py::hash(py::str(d.info().id())); });

  py::class_<SelectionCandidate>(m, "SelectionCandidate", "One device considered for an op at a size.")
      .def_readonly("device", &SelectionCandidate::device, "The device's \"backend:index\" id.")
      .def_readonly("eligible", &SelectionCandidate::eligible,
                    "False: it could not run the op, or computed it wrong (see note).")
      .def_readonly("seconds", &SelectionCandidate::seconds,
                    "Median time of one call (uploads, dispatch, readback), or the prediction.")
      .def_readonly("device_seconds", &SelectionCandidate::device_seconds,
                    "Median time the device's own timer measured for one call's dispatches (0: the device was "
                    "not timing, see Device.device_timing).")
      .def_readonly("runs", &SelectionCandidate::runs,
                    "Timed runs at the real shape (0: predicted from a probe, or ineligible).")
      .def_readonly("demoted", &SelectionCandidate::demoted, "It failed for this op in this process.")
      .def_readonly("note", &SelectionCandidate::note, "Why it was skipped, predicted, rejected or demoted.")
      .def_property_readonly(
          "check", [](const SelectionCandidate& c) { return std::string(to_string(c.check)); },
          "Its first result against a reference: \"passed\", \"wrong\" (never chosen) or \"unchecked\".")
      .def_readonly("check_error", &SelectionCandidate::check_error,
                    "The worst error of its checked result as a multiple of the op's tolerance (<= 1: passed).")
      .def("__repr__", [](const SelectionCandidate& c) {
        std::string r = "SelectionCandidate(" + repr_str(c.device) + ", eligible=" + (c.eligible ? "True" : "False");
        if (c.eligible) r += ", seconds=" + format_seconds(c.seconds) + ", runs=" + std::to_string(c.runs);
        if (c.check != ResultCheck::unchecked) r += ", check=" + repr_str(to_string(c.check));
        if (c.demoted) r += ", demoted=True";
        if (!c.note.empty()) r += ", note=" + repr_str(c.note);
        return r + ")";
      });

  py::class_<Selection>(m, "Selection",
                        "Which device runs an op at a size and why (vgpu.explain()): the choice, where it came "
                        "from and every candidate with its timing. str() gives Selection::describe()'s lines.")
      .def_readonly("op", &Selection::op, "The op asked about.")
      .def_property_readonly(
          "shape", [](const Selection& s) { return shape_tuple(s.shape); }, "The shape asked about.")
      .def_property_readonly(
          "calibration_shape", [](const Selection& s) { return shape_tuple(s.calibration_shape); },
          "The shape the candidates were timed at (the size class's first call).")
      .def_readonly("size_class", &Selection::size_class,
                    "ceil(log2(work)): shapes with the same class share a choice.")
      .def_readonly("device", &Selection::device, "The device to use: \"backend:index\" (vgpu.open() takes it).")
      .def_property_readonly(
          "source", [](const Selection& s) { return std::string(to_string(s.source)); },
          "Where the choice came from: \"calibrated\", \"persisted\", \"forced\", \"fallback\" "
          "or \"only\".")
      .def_readonly("candidates", &Selection::candidates,
                    "Every candidate (vgpu.SelectionCandidate), eligible first, "
                    "fastest first.")
      .def_readonly("calibration_seconds", &Selection::calibration_seconds,
                    "What calibrating cost when it happened (0 when persisted or forced).")
      .def_readonly("lookup_seconds", &Selection::lookup_seconds, "What this explain() call cost.")
      .def("describe", &Selection::describe,
           "Returns a few human-readable lines: the choice, its source and "
           "every candidate.")
      .def("__str__", &Selection::describe)
      .def("__repr__", [](const Selection& s) {
        return "Selection(op=" + repr_str(s.op) + ", shape=" + shape_text(s.shape) + ", device=" + repr_str(s.device) +
               ", source=" + repr_str(std::string(to_string(s.source))) +
               ", candidates=" + std::to_string(s.candidates.size()) + ")";
      });

  m.def(
      "devices",
      [] {
        py::gil_scoped_release release;
        return Runtime::global().devices();
      },
      "Returns every device of every allowed, available backend (vgpu.DeviceInfo), in registry order "
      "(CPU last). VGPU_BACKEND restricts the backends.");
  m.def(
      "backends",
      [] {
        py::gil_scoped_release release;
        return Runtime::global().backends();
      },
      "Returns every compiled-in backend with its availability and reason (vgpu.BackendStatus), in registry order.");
  m.def(
      "open",
      [](py::object id) {
        if (py::isinstance<py::str>(id) || py::isinstance<DeviceInfo>(id)) return device_arg(id, "id");
        fail(ErrorCategory::invalid_argument,
             "open() takes a \"backend:index\" id or a vgpu.DeviceInfo, not a " +
                 py::str(id.get_type().attr("__name__")).cast<std::string>() + ".",
             "Pass an id such as \"cpu:0\" (vgpu.devices() lists them).");
      },
      py::arg("id"),
      "Opens (or returns the already open) device with this \"backend:index\" id, or the one a "
      "vgpu.DeviceInfo describes. Raises vgpu.InvalidArgument for a malformed or unknown id and "
      "vgpu.Unavailable for a backend that cannot run here; a lost device is returned as it is (its next "
      "call recovers it).");
  m.def(
      "default_device",
      [] {
        py::gil_scoped_release release;
        return Runtime::global().default_device();
      },
      "Returns the device to use when the caller has no preference: VGPU_DEVICE if set, else the first "
      "device in registry order (CPU last).");
  m.def(
      "select",
      [](const std::string& op, py::handle shape, py::object dtype) {
        const Shape s = op_shape_arg(op, shape);
        const std::optional<DType> d = dtype.is_none() ? std::nullopt : std::optional(dtype_arg(dtype, "dtype"));
        py::gil_scoped_release release;
        return d ? select(Runtime::global(), op, s, *d) : Runtime::global().select(op, s);
      },
      py::arg("op"), py::arg("shape"), py::kw_only(), py::arg("dtype") = py::none(),
      "Returns the device to run built-in op at shape on: measured on the first call of its size class "
      "(this may take a while; the GIL is released), persisted next to the L2 cache, forced by VGPU_DEVICE. "
      "shape: an int N (matmul: N×N×N, softmax_rows: N×N, others: n) or a tuple (matmul (M, K, N), "
      "softmax_rows (rows, cols), others (n,)). dtype: the arrays' (None: float32; \"float16\" and "
      "\"bfloat16\" are selected on their own, as op \"matmul.f16\" …). Raises vgpu.Unavailable when no device "
      "can run it, vgpu.InvalidArgument for an unknown op or a bad shape, vgpu.NotSupported for a dtype the ops "
      "do not compute on.");
  m.def(
      "explain",
      [](const std::string& op, py::handle shape, py::object dtype) {
        const Shape s = op_shape_arg(op, shape);
        const std::optional<DType> d = dtype.is_none() ? std::nullopt : std::optional(dtype_arg(dtype, "dtype"));
        py::gil_scoped_release release;
        return d ? explain(Runtime::global(), op, s, *d) : Runtime::global().explain(op, s);
      },
      py::arg("op"), py::arg("shape"), py::kw_only(), py::arg("dtype") = py::none(),
      "Returns the vgpu.Selection for op at shape, with every candidate, its timing and the source "
      "(calibrating on first use, as select() does). shape and dtype as for select().");
  m.def(
      "settle",
      [](py::handle seconds) {
        const double timeout_s = number_arg(seconds, "settle's timeout_s");
        if (!(timeout_s >= 0) || timeout_s > 1e9)
          fail(ErrorCategory::invalid_argument, "settle(timeout_s=" + std::to_string(timeout_s) + ") is out of range.",
               "pass a number of seconds from 0 up to 1e9.");
        py::gil_scoped_release release;
        return Runtime::global().settle(std::chrono::milliseconds(static_cast<std::int64_t>(timeout_s * 1000)));
      },
      py::arg("timeout_s") = 600.0,
      "Waits until no background calibration is running (VGPU_BACKGROUND: a first call of a size class "
      "runs on the CPU while the devices are measured in the background; later calls switch over). "
      "Returns False when timeout_s passed first. Call it before timing steady state, or before exit "
      "so that the next process starts from the stored choice.");
  m.def(
      "background_stats",
      [] {
        const BackgroundStats b = Runtime::global().background_stats();
        py::dict d;
        d["interim"] = b.interim;
        d["rechecks"] = b.rechecks;
        d["finished"] = b.finished;
        d["switches"] = b.switches;
        d["failed"] = b.failed;
        d["cancelled"] = b.cancelled;
        return d;
      },
      "Returns what background calibration did so far, as a dict: interim (size classes served by the CPU "
      "while measured), rechecks, finished, switches (choices that moved off the interim device), failed, "
      "cancelled.");
  // Interpreter exit: Python's atexit hooks run before the interpreter is torn down and before
  // the C exit handlers (the drivers' among them), so the background calibrations stop here,
  // while everything they use still works. Hooks registered before the import run after this
  // one (vgpu still works then, without background calibration), later ones before it.
  py::module_::import("atexit").attr("register")(py::cpp_function([] {
    py::gil_scoped_release release;  // a step in flight may need the GIL to finish
    Runtime::stop_background_work();
  }));
  m.def(
      "counters",
      [] {
        CounterSnapshot c;
        {
          py::gil_scoped_release release;
          c = Runtime::global().counters();
        }
        return counters_dict(c);
      },
      "Returns the sum of the counters of every device opened so far, as a dict.");
  m.def(
      "inventory",
      [](bool json, py::handle indent_arg) {
        const int indent = static_cast<int>(int_arg(indent_arg, "indent", -1, 64));  // -1: one line
        py::gil_scoped_release release;
        Runtime& runtime = Runtime::global();
        const auto backends = runtime.backends();
        const auto devices = runtime.devices();
        return json ? inventory_json(backends, devices, indent) : inventory_text(backends, devices);
      },
      py::kw_only(), py::arg("json") = false, py::arg("indent") = 2,
      "Returns the backends and devices found as vgpu-probe prints them (without its self-tests): the "
      "table, or with json=True the JSON object {\"version\", \"cache_format_version\", \"backends\", "
      "\"devices\"} (each device's \"self_test\" and \"feature_checks\" null), indented by indent spaces. `python3 -m "
      "vgpu` prints it.");
  m.def("ops", &ops::names, "Returns the names of the built-in ops, as KernelDatabase.get() and select() accept them.");
}

}  // namespace vgpu::python
