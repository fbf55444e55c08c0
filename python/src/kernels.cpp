// SPDX-License-Identifier: Apache-2.0
// python/src/kernels.cpp — vgpu.PersistentKernel (built-in ops and user kernels), vgpu.Tensor,
// vgpu.Step and vgpu.CpuWorkgroup.
//
// Call rule: k(*arrays, out=None, timeout=None). The arguments are the plan's non-scratch
// tensors in order. Either pass every one of them (outputs are then written in place), or
// pass only those the kernel reads (access "read" and "read_write") and the write-only
// outputs are allocated (or taken from out=, one array or a tuple in order). The call returns
// the tensors it wrote — the write-only outputs and the read_write ones — as one array, or a
// tuple when there are several. A read_write tensor is written in place, so it follows the
// output rules (arrays.hpp).
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <chrono>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "array_interop.hpp"
#include "arrays.hpp"
#include "bindings.hpp"
#include "core_args.hpp"
#include "device_arg.hpp"
#include "int_args.hpp"
#include "kernel_source.hpp"
#include "py_kernel.hpp"
#include "vgpu/error.hpp"
#include "vgpu/ops.hpp"
#include "vgpu/persistent_kernel.hpp"
#include "vgpu/runtime.hpp"

namespace py = pybind11;

namespace vgpu::python {

/// Returns seconds (None: nothing) as a limit in milliseconds (rounded up; 0: no limit).
std::optional<std::chrono::milliseconds> timeout_arg(py::handle seconds);

namespace {

using std::to_string;

std::string type_name(py::handle obj) { return py::str(obj.get_type().attr("__name__")).cast<std::string>(); }

// Returns f() run with the GIL released: a kernel's counters wait for a call in progress, which
// may need the GIL (a cpu= callable).
template <class F>
auto released(F&& f) {
  py::gil_scoped_release release;
  return f();
}

Shape dims_arg(py::handle obj, const std::string& what) {
  Shape shape;
  if (!py::isinstance<py::bool_>(obj) && (py::isinstance<py::int_>(obj) || py::hasattr(obj, "__index__"))) {
    shape.push_back(uint_arg(obj, what));
    return shape;
  }
  if (!py::isinstance<py::sequence>(obj) || py::isinstance<py::str>(obj))
    fail(ErrorCategory::invalid_argument, what + " is a " + type_name(obj) + ", not a shape.",
         "pass a tuple of positive integers, e.g. (16, 16).");
  for (py::handle d : py::reinterpret_borrow<py::sequence>(obj))
    shape.push_back(uint_arg(d, what + "[" + to_string(shape.size()) + "]"));
  return shape;
}

Groups groups_arg(py::handle obj, const std::string& what) {
  const Shape s = dims_arg(obj, what);
  if (s.empty() || s.size() > 3)
    fail(ErrorCategory::invalid_argument, what + " has " + to_string(s.size()) + " counts.",
         "pass (x,), (x, y) or (x, y, z).");
  Groups g;
  std::uint32_t* dims[3] = {&g.x, &g.y, &g.z};
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == 0 || s[i] > 0xFFFFFFFFull)
      fail(ErrorCategory::invalid_argument, what + "[" + to_string(i) + "] is " + to_string(s[i]) + ".",
           "give every group count in 1..4294967295.");
    *dims[i] = static_cast<std::uint32_t>(s[i]);
  }
  return g;
}

// Throws InvalidArgument (prefixed with what) when t's size in bytes does not fit in 64 bits: a
// tensor that could never exist is refused where it is described.
void check_tensor_size(const TensorSpec& t, const std::string& what) {
  try {
    (void)tensor_bytes(t.shape, t.dtype);
  } catch (const Error& e) {
    throw Error(e.category(), what + " ('" + t.name + "'): " + e.problem(), e.fix());
  }
}

TensorSpec tensor_arg(py::handle obj, std::size_t i) {
  const std::string what = "tensors[" + to_string(i) + "]";
  if (py::isinstance<TensorSpec>(obj)) return obj.cast<TensorSpec>();
  if (!py::isinstance<py::tuple>(obj) && !py::isinstance<py::list>(obj))
    fail(ErrorCategory::invalid_argument, what + " is a " + type_name(obj) + ".",
         "pass vgpu.Tensor(name, dtype, shape, access) or a tuple (name, dtype, shape[, access[, scratch]]).");
  py::sequence t = py::reinterpret_borrow<py::sequence>(obj);
  if (t.size() < 3 || t.size() > 5)
    fail(ErrorCategory::invalid_argument, what + " has " + to_string(t.size()) + " fields.",
         "pass (name, dtype, shape[, access[, scratch]]).");
  TensorSpec s;
  s.name = py::str(t[0]).cast<std::string>();
  s.dtype = parse_dtype(t[1], what + " dtype");
  s.shape = dims_arg(t[2], what + " shape");
  if (t.size() > 3) s.access = parse_access(t[3], what + " access");
  if (t.size() > 4) s.scratch = t[4].cast<bool>();
  check_tensor_size(s, what);
  return s;
}

std::vector<std::pair<std::uint32_t, std::uint32_t>> slots_arg(py::handle obj, const std::string& what) {
  std::vector<std::pair<std::uint32_t, std::uint32_t>> out;
  if (py::isinstance<py::dict>(obj)) {
    for (auto [k, v] : py::reinterpret_borrow<py::dict>(obj))
      out.emplace_back(u32_arg(k, what + " slot"), u32_arg(v, what + " tensor index"));
    return out;
  }
  if (!py::isinstance<py::sequence>(obj) || py::isinstance<py::str>(obj))
    fail(ErrorCategory::invalid_argument, what + " is a " + type_name(obj) + ".",
         "pass {slot: tensor_index} or a list of (slot, tensor_index) pairs.");
  for (py::handle p : py::reinterpret_borrow<py::sequence>(obj)) {
    if (!py::isinstance<py::sequence>(p) || py::isinstance<py::str>(p) || py::len(p) != 2)
      fail(ErrorCategory::invalid_argument, what + " holds " + py::repr(p).cast<std::string>() + ".",
           "pass {slot: tensor_index} or a list of (slot, tensor_index) pairs.");
    const py::sequence pair = py::reinterpret_borrow<py::sequence>(p);
    out.emplace_back(u32_arg(pair[0], what + " slot"), u32_arg(pair[1], what + " tensor index"));
  }
  return out;
}

std::string access_name(Access a) { return std::string(vgpu::to_string(a)); }

// A shape as Python writes a tuple: "(4, 5)", "(7,)".
std::string shape_tuple_text(const Shape& s) {
  std::string out = "(";
  for (std::size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + to_string(s[i]);
  return out + (s.size() == 1 ? ",)" : ")");
}

// What one would type to make t again.
std::string tensor_repr(const TensorSpec& t) {
  return "vgpu.Tensor('" + t.name + "', '" + np_name(t.dtype) + "', " + shape_tuple_text(t.shape) + ", '" +
         access_name(t.access) + "'" + (t.scratch ? ", scratch=True" : "") + ")";
}

py::tuple shape_tuple(const Shape& s) {
  py::tuple t(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) t[i] = py::int_(s[i]);
  return t;
}

// The argument layout of kernel k: the plan's non-scratch tensors, and how many of them it reads.
void lay_out_arguments(PyKernel& k, const KernelPlan& plan) {
  for (std::uint32_t i = 0; i < plan.tensors.size(); ++i)
    if (!plan.tensors[i].scratch) {
      k.visible.push_back(i);
      if (plan.tensors[i].access != Access::write) ++k.read_count;
    }
}

// Builds the kernel (compile, allocate, bind: the GIL released) and the argument layout.
std::unique_ptr<PyKernel> finish(Device device, KernelPlan plan, std::shared_ptr<CpuCallback> callback) {
  auto k = std::make_unique<PyKernel>();
  k->callback = std::move(callback);
  lay_out_arguments(*k, plan);
  {
    py::gil_scoped_release release;
    k->kernel = std::make_shared<PersistentKernel>(std::move(device), std::move(plan));
  }
  if (k->callback) k->callback->owner = k->kernel;
  return k;
}

std::unique_ptr<PyKernel> make_kernel(py::object op, py::object shape, py::object device, py::object name,
                                      py::object glsl, py::object glsl_shader, py::object spirv, py::object cuda,
                                      py::object entry, py::object cpu, py::object tensors, py::object groups,
                                      py::object params, py::object slots, py::object steps, py::object bindings,
                                      py::object params_size, py::object defines, py::object workgroup_size,
                                      py::object spec_constants) {
  refuse_inside_cpu_callable("building a vgpu.PersistentKernel");
  const bool user = !glsl.is_none() || !glsl_shader.is_none() || !spirv.is_none() || !cuda.is_none() || !cpu.is_none();
  if (!op.is_none()) {  // a built-in op
    if (user || !tensors.is_none() || !steps.is_none() || !groups.is_none())
      fail(ErrorCategory::invalid_argument, "PersistentKernel got a built-in op name and a user kernel's arguments.",
           "pass either an op and its shape (PersistentKernel(\"matmul\", (M, K, N))) or a user kernel "
           "(glsl=/glsl_shader=/spirv=/cuda=/cpu= with tensors= and groups=), not both.");
    if (!py::isinstance<py::str>(op))
      fail(ErrorCategory::invalid_argument, "op is a " + type_name(op) + ", not an op name.",
           "pass one of the built-in op names (matmul, axpy, add, mul, reduce_sum, softmax_rows).");
    if (shape.is_none())
      fail(ErrorCategory::invalid_argument, "PersistentKernel(\"" + op.cast<std::string>() + "\") needs its shape.",
           "pass the shape: (M, K, N) for matmul, (rows, cols) for softmax_rows, (n,) for the others.");
    const std::string op_name = op.cast<std::string>();
    const Shape s = op_shape_arg(op_name, shape);
    ops::check_shape(op_name, s);
    Device dev = device_arg(device);
    KernelPlan plan;
    {
      py::gil_scoped_release release;
      if (!dev) dev = Runtime::global().select(op_name, s);
      plan = ops::plan(op_name, dev, s);
    }
    return finish(std::move(dev), std::move(plan), nullptr);
  }
  if (!user)
    fail(ErrorCategory::invalid_argument, "PersistentKernel needs a built-in op or a user kernel's source.",
         "pass PersistentKernel(\"matmul\", (M, K, N)), or glsl=/glsl_shader=/spirv=/cuda= (with entry=)/cpu= "
         "with tensors= and groups=.");
  const std::string kernel_name = name.is_none() ? std::string("user_kernel") : py::str(name).cast<std::string>();
  UserSource u =
      user_source(kernel_name, glsl, glsl_shader, spirv, cuda, entry, cpu, defines, workgroup_size, spec_constants);
  KernelPlan plan;
  if (tensors.is_none() || !py::isinstance<py::sequence>(tensors) || py::len(tensors) == 0)
    fail(ErrorCategory::invalid_argument, "user kernel '" + kernel_name + "' needs tensors=.",
         "list its buffers: tensors=[vgpu.Tensor(\"x\", \"float32\", (n,), \"read\"), ...] or tuples.");
  {
    std::size_t i = 0;
    for (py::handle t : py::reinterpret_borrow<py::sequence>(tensors)) plan.tensors.push_back(tensor_arg(t, i++));
  }
  if (!steps.is_none()) {
    if (!groups.is_none() || !params.is_none() || !slots.is_none())
      fail(ErrorCategory::invalid_argument, "user kernel '" + kernel_name + "' got steps= and groups=/params=/slots=.",
           "give each vgpu.Step its own slots, params and groups, or pass groups=/params=/slots= for one step.");
    for (py::handle s : py::reinterpret_borrow<py::sequence>(steps)) {
      if (!py::isinstance<PlanStep>(s))
        fail(ErrorCategory::invalid_argument, "steps holds a " + type_name(s) + ".", "pass a list of vgpu.Step(...).");
      plan.steps.push_back(s.cast<PlanStep>());
    }
  } else {
    if (groups.is_none())
      fail(ErrorCategory::invalid_argument, "user kernel '" + kernel_name + "' needs groups=.",
           "pass the workgroup counts of its dispatch, e.g. groups=((n + 63) // 64,) for a local size of 64.");
    PlanStep step;
    step.groups = groups_arg(groups, "groups");
    step.params = params_block(params, "params");
    if (slots.is_none()) {
      for (std::uint32_t i = 0; i < plan.tensors.size(); ++i) step.slot_tensor.emplace_back(i, i);
    } else {
      const Shape slot_list = dims_arg(slots, "slots");
      if (slot_list.size() != plan.tensors.size())
        fail(ErrorCategory::invalid_argument,
             "slots has " + to_string(slot_list.size()) + " entries but kernel '" + kernel_name + "' has " +
                 to_string(plan.tensors.size()) + " tensors.",
             "give one binding slot per tensor, in the order of tensors=.");
      for (std::uint32_t i = 0; i < slot_list.size(); ++i) {
        if (slot_list[i] > 0xFFFFFFFFull)
          fail(ErrorCategory::invalid_argument,
               "slots[" + to_string(i) + "] is " + to_string(slot_list[i]) + ", outside 0..4294967295.",
               "pass an integer in 0..4294967295.");
        step.slot_tensor.emplace_back(static_cast<std::uint32_t>(slot_list[i]), i);
      }
    }
    plan.steps.push_back(std::move(step));
  }
  // Bindings: derived from reflection (GLSL/SPIR-V only), declared from the tensors, or given.
  bool declare = !u.reflected_only;
  if (py::isinstance<py::str>(bindings)) {
    const std::string b = bindings.cast<std::string>();
    if (b == "derived") {
      if (!u.reflected_only)
        fail(ErrorCategory::invalid_argument,
             "bindings=\"derived\" for kernel '" + kernel_name +
                 "', but only complete GLSL shaders and SPIR-V are reflected (a GLSL body, CUDA and CPU kernels are "
                 "not).",
             "leave bindings= unset (declared from tensors=) or list them.");
      declare = false;
    } else if (b == "declared") {
      declare = true;
    } else {
      fail(ErrorCategory::invalid_argument, "bindings is '" + b + "'.",
           "pass \"derived\", \"declared\" or a list of (slot, access[, name]).");
    }
  } else if (!bindings.is_none()) {
    declare = false;
    for (py::handle d : py::reinterpret_borrow<py::sequence>(bindings)) {
      py::sequence t = py::reinterpret_borrow<py::sequence>(d);
      if (!py::isinstance<py::sequence>(d) || t.size() < 2 || t.size() > 3)
        fail(ErrorCategory::invalid_argument, "bindings holds " + py::repr(d).cast<std::string>() + ".",
             "list each slot as (slot, access[, name]), e.g. (0, \"read\", \"x\").");
      BindingDecl decl;
      decl.slot = u32_arg(t[0], "bindings slot");
      decl.access = parse_access(t[1], "binding access");
      if (t.size() > 2) decl.name = py::str(t[2]).cast<std::string>();
      u.source.bindings.push_back(std::move(decl));
    }
  }
  if (declare) {
    const PlanStep& step = plan.steps.front();
    for (const auto& [slot, tensor] : step.slot_tensor) {
      if (tensor >= plan.tensors.size()) continue;  // PersistentKernel names the bad index
      const TensorSpec& t = plan.tensors[tensor];
      // No required_bytes: the tensor's own size would always hold (the kernel allocates its
      // buffers at exactly that size), and a captured size must not be one (RequiredBytesFn):
      // kernels of one source share a compile, whose check would then be another size's.
      u.source.bindings.push_back(BindingDecl{slot, t.access, t.name, {}});
    }
  }
  if (!params_size.is_none())
    u.source.params_size = u32_arg(params_size, "params_size");
  else if (declare || !u.source.bindings.empty())
    u.source.params_size = static_cast<std::uint32_t>(plan.steps.front().params.size());
  if (u.callback)
    for (const auto& [slot, tensor] : plan.steps.front().slot_tensor)
      if (tensor < plan.tensors.size())
        u.callback->slot_views[slot] = {plan.tensors[tensor].dtype, plan.tensors[tensor].shape};
  plan.source = std::move(u.source);
  plan.options = std::move(u.options);
  Device dev = device_arg(device);
  if (!dev) dev = default_device_for(plan.source);
  return finish(std::move(dev), std::move(plan), std::move(u.callback));
}

// Hands out the Python argument of each tensor in turn: all tensors in order (full), or the
// tensors read in order and the write-only ones from out= (a null handle: none given, allocate).
class ArgPicker {
 public:
  ArgPicker(const py::args& args, const std::vector<py::handle>& outs, bool full)
      : args_(args), outs_(outs), full_(full) {}
  /// Returns the argument given for tensor a, which is accessed as access; call for a = 0, 1, … in order.
  py::handle next(std::size_t a, Access access) {
    if (full_) return args_[a];
    if (access != Access::write) return args_[next_in_++];
    if (!outs_.empty()) return outs_[next_out_++];
    return {};
  }

 private:
  const py::args& args_;
  const std::vector<py::handle>& outs_;
  bool full_;
  std::size_t next_in_ = 0, next_out_ = 0;
};

py::object call_kernel(PyKernel& self, py::args args, py::object out, py::object timeout) {
  const KernelPlan& plan = self.kernel->plan();
  const std::string& name = plan.source.name;
  const std::size_t n = self.visible.size();
  const std::size_t given = args.size();
  std::vector<py::handle> outs;
  if (!out.is_none()) {
    if (py::isinstance<py::tuple>(out) || py::isinstance<py::list>(out))
      for (py::handle o : py::reinterpret_borrow<py::sequence>(out)) outs.push_back(o);
    else
      outs.push_back(out);
  }
  const std::size_t write_only = n - self.read_count;
  auto names = [&](bool reads_only) {
    std::string s;
    for (auto i : self.visible)
      if (!reads_only || plan.tensors[i].access != Access::write) s += (s.empty() ? "" : ", ") + plan.tensors[i].name;
    return s;
  };
  const bool full = given == n && out.is_none();
  if (!full && given != self.read_count)
    fail(ErrorCategory::invalid_argument,
         "kernel '" + name + "' takes " + to_string(n) + " arrays (" + names(false) + "), or the " +
             to_string(self.read_count) + " it reads (" + names(true) +
             ") with its outputs allocated or in out=, but got " + to_string(given) + ".",
         "pass the arrays in the order of the kernel's tensors.");
  if (!full && !out.is_none() && outs.size() != write_only)
    fail(ErrorCategory::invalid_argument,
         "out= holds " + to_string(outs.size()) + " arrays but kernel '" + name + "' writes " + to_string(write_only) +
             ".",
         "pass one output array per write-only tensor, in order (a tuple when there are several).");
  // With a vgpu.Array among the arguments the call runs on arrays of the kernel's device and
  // returns arrays: no host traffic (host arguments are wrapped on that device first).
  bool on_arrays = false;
  for (py::handle a : args) on_arrays = on_arrays || py::isinstance<Array>(a);
  for (py::handle o : outs) on_arrays = on_arrays || py::isinstance<Array>(o);
  if (on_arrays) {
    if (!timeout.is_none())
      fail(
          ErrorCategory::invalid_argument, "timeout= applies to calls on host arrays, which wait for their results.",
          "leave timeout out with vgpu.Array arguments (the call submits without waiting), or set the device's limit.");
    const Device& dev = self.kernel->device();
    std::vector<Array> arrays;
    ArgPicker pick(args, outs, full);
    py::list results;
    for (std::size_t a = 0; a < n; ++a) {
      const TensorSpec& t = plan.tensors[self.visible[a]];
      const std::string label = "tensor '" + t.name + "' (argument " + to_string(a) + ") of kernel '" + name + "'";
      const py::handle given_arg = pick.next(a, t.access);
      Array arr = given_arg ? array_arg(given_arg, dev, t.dtype, CopyMode::if_needed, label)
                            : Array::empty(dev, t.dtype, t.shape);
      if (t.access != Access::read) results.append(py::cast(arr));
      arrays.push_back(std::move(arr));
    }
    PersistentKernel& k = *self.kernel;
    run_released(self.callback, [&] { k(std::span<const Array>(arrays.data(), arrays.size())); });
    if (results.empty()) return py::none();
    if (results.size() == 1) return results[0];
    return py::tuple(results);
  }
  std::vector<py::array> arrays;
  arrays.reserve(n);
  std::vector<TensorArg> targs;
  targs.reserve(n);
  ArgPicker pick(args, outs, full);
  py::list results;
  for (std::size_t a = 0; a < n; ++a) {
    const TensorSpec& t = plan.tensors[self.visible[a]];
    const std::string label = "tensor '" + t.name + "' (argument " + to_string(a) + ") of kernel '" + name + "'";
    const py::handle given_arg = pick.next(a, t.access);
    py::array arr = !given_arg                 ? new_array(t.dtype, t.shape)
                    : t.access == Access::read ? input_array(given_arg, t.dtype, label)
                                               : output_array(given_arg, t.dtype, label);
    if (t.access != Access::read) results.append(arr);
    const Shape shape = shape_of(arr);
    // Outputs were checked writeable; inputs (possibly read-only arrays) are only read.
    void* data = t.access == Access::read ? const_cast<void*>(arr.data()) : arr.mutable_data();
    targs.push_back(t.access == Access::read ? TensorArg(t.dtype, shape, static_cast<const void*>(data))
                                             : TensorArg(t.dtype, shape, data));
    arrays.push_back(std::move(arr));
  }
  const std::optional<std::chrono::milliseconds> limit = timeout_arg(timeout);
  PersistentKernel& k = *self.kernel;
  run_released(self.callback, [&] {
    const std::span<const TensorArg> span(targs.data(), targs.size());
    if (limit)
      k(span, *limit);
    else
      k(span);
  });
  if (results.empty()) return py::none();
  if (results.size() == 1) return results[0];
  return py::tuple(results);
}

std::string kernel_repr(const PyKernel& self) {
  const KernelPlan& plan = self.kernel->plan();
  std::string s = "<vgpu.PersistentKernel '" + plan.source.name + "' on " + self.kernel->device().info().id() + ": ";
  bool first = true;
  for (auto i : self.visible) {
    const TensorSpec& t = plan.tensors[i];
    s += (first ? "" : ", ") + t.name + vgpu::to_string(t.shape) + " " + np_name(t.dtype) + " " + access_name(t.access);
    first = false;
  }
  std::uint64_t calls = 0;
  {
    py::gil_scoped_release release;  // calls() waits for a running call, which may need the GIL
    calls = self.kernel->calls();
  }
  return s + "; " + to_string(calls) + " calls>";
}

}  // namespace

std::optional<std::chrono::milliseconds> timeout_arg(py::handle seconds) {
  if (seconds.is_none()) return std::nullopt;
  if (py::isinstance<py::bool_>(seconds) || !(py::isinstance<py::float_>(seconds) || py::isinstance<py::int_>(seconds)))
    fail(ErrorCategory::invalid_argument, "timeout is a " + type_name(seconds) + ", not a number of seconds.",
         "pass seconds as a number (0: no limit), or None for the device's limit.");
  const double s = number_arg(seconds, "timeout");  // an int past a double's range: infinity, refused below
  if (!(s >= 0) || s > 1e9)
    fail(ErrorCategory::invalid_argument, "timeout is " + py::repr(seconds).cast<std::string>() + " seconds.",
         "pass a limit of 0 (none) or more seconds.");
  return std::chrono::milliseconds(static_cast<std::int64_t>(std::ceil(s * 1000.0)));
}

py::object wrap_kernel(std::shared_ptr<PersistentKernel> kernel) {
  auto k = std::make_unique<PyKernel>();
  lay_out_arguments(*k, kernel->plan());
  k->kernel = std::move(kernel);
  return py::cast(std::move(k));
}

void bind_kernels(py::module_& m) {
  bind_workgroup(m);

  py::class_<TensorSpec>(
      m, "Tensor",
      "One tensor a user kernel's plan allocates on the device (vgpu::TensorSpec). Non-scratch "
      "tensors are the kernel call's arguments, in declaration order; scratch tensors live on the "
      "device only. access: \"read\" (uploaded each call), \"write\" (read back), \"read_write\" (both).")
      .def(py::init([](std::string name, py::handle dtype, py::handle shape, py::handle access, bool scratch) {
             TensorSpec t;
             t.name = std::move(name);
             t.dtype = parse_dtype(dtype, "dtype");
             t.shape = dims_arg(shape, "shape");
             t.access = parse_access(access, "access");
             t.scratch = scratch;
             check_tensor_size(t, "vgpu.Tensor");
             return t;
           }),
           py::arg("name"), py::arg("dtype") = "float32", py::arg("shape") = py::make_tuple(1),
           py::arg("access") = "read", py::arg("scratch") = false)
      .def_readonly("name", &TensorSpec::name, "The tensor's name (for messages).")
      .def_property_readonly(
          "dtype", [](const TensorSpec& t) { return numpy_dtype(t.dtype); }, "Its numpy dtype.")
      .def_property_readonly(
          "shape", [](const TensorSpec& t) { return shape_tuple(t.shape); }, "Its shape.")
      .def_property_readonly(
          "access", [](const TensorSpec& t) { return access_name(t.access); }, "\"read\", \"write\" or \"read_write\".")
      .def_readonly("scratch", &TensorSpec::scratch, "True for a device-only tensor (not an argument).")
      .def("__repr__", &tensor_repr);

  py::class_<PlanStep>(m, "Step",
                       "One dispatch of a user kernel's plan (vgpu::PlanStep): which tensor sits at which binding "
                       "slot, its params block and its workgroup counts.")
      .def(py::init([](py::handle slots, py::handle params, py::handle groups, py::handle kernel) {
             PlanStep s;
             s.slot_tensor = slots_arg(slots, "slots");
             s.params = params_block(params, "params");
             s.groups = groups_arg(groups, "groups");
             s.kernel = u32_arg(kernel, "kernel");
             return s;
           }),
           py::arg("slots"), py::arg("params") = py::none(), py::arg("groups") = py::make_tuple(1),
           py::arg("kernel") = 0,
           "slots: {slot: tensor_index} or [(slot, tensor_index), ...]; params: bytes-like or a numpy array (≤ 128 "
           "bytes); groups: (x[, y[, z]]) workgroup counts.")
      .def_property_readonly(
          "slots", [](const PlanStep& s) { return s.slot_tensor; }, "(slot, tensor index) pairs.")
      .def_property_readonly(
          "groups", [](const PlanStep& s) { return py::make_tuple(s.groups.x, s.groups.y, s.groups.z); },
          "The workgroup counts (x, y, z).")
      .def_property_readonly(
          "params",
          [](const PlanStep& s) { return py::bytes(static_cast<const char*>(s.params.data()), s.params.size()); },
          "The params block's bytes.")
      .def_readonly("kernel", &PlanStep::kernel, "The plan kernel it runs (0).")
      .def("__repr__", [](const PlanStep& s) {
        std::string t;
        for (const auto& [slot, tensor] : s.slot_tensor)
          t += (t.empty() ? "" : ", ") + to_string(slot) + ": " + to_string(tensor);
        return "vgpu.Step({" + t + "}, params=<" + to_string(s.params.size()) + " bytes>, groups=(" +
               to_string(s.groups.x) + ", " + to_string(s.groups.y) + ", " + to_string(s.groups.z) + "))";
      });

  py::class_<PyKernel>(m, "PersistentKernel",
                       "A kernel compiled, allocated and bound once (vgpu::PersistentKernel); a call only uploads "
                       "the inputs, runs the recorded dispatches and reads the outputs back, so changing only data "
                       "compiles, allocates and binds nothing.\n\n"
                       "Built-in op: PersistentKernel(\"matmul\", (M, K, N), device=None) (device None: the device "
                       "vgpu.select measures fastest for it).\n"
                       "User kernel: PersistentKernel(name=..., glsl= | glsl_shader= | spirv= | cuda= + entry= | "
                       "cpu=callable, tensors=[vgpu.Tensor(...)], groups=(x, y, z), params=bytes, slots=[...] or "
                       "steps=[vgpu.Step(...)], bindings=None | \"derived\" | \"declared\" | [(slot, access, name)], "
                       "params_size=None, defines={}, workgroup_size=(x, y, z), spec_constants={id or name: value}, "
                       "device=None) (device None: the default device if it takes one of the dialects, else the "
                       "first that does). Complete GLSL shaders and SPIR-V get their bindings and params size from "
                       "reflection unless declared; GLSL bodies, CUDA and CPU kernels get them declared from "
                       "tensors=.\n\n"
                       "Call: k(*arrays, out=None, timeout=None) — pass every tensor (outputs written in place), or "
                       "only those read (write-only outputs allocated, or given in out=); returns the written "
                       "tensors (one array, or a tuple). The GIL is released during the call. Thread-safe: calls "
                       "are serialised.")
      .def(py::init(&make_kernel), py::arg("op") = py::none(), py::arg("shape") = py::none(), py::kw_only(),
           py::arg("device") = py::none(), py::arg("name") = py::none(), py::arg("glsl") = py::none(),
           py::arg("glsl_shader") = py::none(), py::arg("spirv") = py::none(), py::arg("cuda") = py::none(),
           py::arg("entry") = py::none(), py::arg("cpu") = py::none(), py::arg("tensors") = py::none(),
           py::arg("groups") = py::none(), py::arg("params") = py::none(), py::arg("slots") = py::none(),
           py::arg("steps") = py::none(), py::arg("bindings") = py::none(), py::arg("params_size") = py::none(),
           py::arg("defines") = py::none(), py::arg("workgroup_size") = py::none(),
           py::arg("spec_constants") = py::none(),
           "Compiles each kernel once, allocates every tensor and binds and records every step; raises "
           "InvalidArgument for a malformed plan, CompileError with the compiler's log, NotSupported.")
      .def("__call__", &call_kernel, py::arg("out") = py::none(), py::arg("timeout") = py::none(),
           "Runs the kernel: k(*arrays, out=None, timeout=None) (see the class doc). timeout: seconds for this call "
           "(0: none; None: the device's). Raises InvalidArgument for a wrong count, dtype, shape, a non-contiguous "
           "or read-only output; Timeout; and re-raises what a cpu= callable raised.")
      .def_property_readonly(
          "calls", [](const PyKernel& k) { return released([&] { return k.kernel->calls(); }); }, "Calls made so far.")
      .def_property_readonly(
          "dispatches", [](const PyKernel& k) { return released([&] { return k.kernel->dispatches(); }); },
          "Kernel dispatches made so far (calls × steps).")
      .def_property_readonly(
          "total_seconds", [](const PyKernel& k) { return released([&] { return k.kernel->total_seconds(); }); },
          "Total wall time spent inside calls, in seconds.")
      .def_property_readonly(
          "device", [](const PyKernel& k) { return device_object(k.kernel->device()); },
          "The device the kernel lives on (a vgpu.Device, or its id where that type is not bound).")
      .def_property_readonly(
          "device_id", [](const PyKernel& k) { return k.kernel->device().info().id(); },
          "The device's id, \"backend:index\".")
      .def_property_readonly(
          "name", [](const PyKernel& k) { return k.kernel->plan().source.name; }, "The kernel's name.")
      .def_property_readonly(
          "tensors",
          [](const PyKernel& k) {
            py::list l;
            for (auto i : k.visible) l.append(py::cast(k.kernel->plan().tensors[i]));
            return l;
          },
          "The call's tensors (vgpu.Tensor), in argument order.")
      .def_property_readonly(
          "workgroup_size",
          [](const PyKernel& k) {
            const auto ws = k.kernel->kernel(0).workgroup_size();
            return py::make_tuple(ws[0], ws[1], ws[2]);
          },
          "The local size kernel 0 runs with (the shader's own, or workgroup_size=, or 64x1x1).")
      .def("__repr__", &kernel_repr)
      // Two handles are equal when they hold the same C++ kernel (KernelDatabase.get returns a
      // new handle on every hit).
      .def(
          "__eq__",
          [](const PyKernel& a, py::handle b) {
            return py::isinstance<PyKernel>(b) && a.kernel == b.cast<const PyKernel&>().kernel;
          },
          "True when both hold the same kernel (a KernelDatabase hit returns the kernel it built).")
      .def("__hash__", [](const PyKernel& k) { return std::hash<const void*>()(k.kernel.get()); });
}

}  // namespace vgpu::python
