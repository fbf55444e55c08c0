// SPDX-License-Identifier: Apache-2.0
// python/src/queue.cpp — vgpu.PersistentQueue, vgpu.QueueKernel, vgpu.QueueReport, vgpu.run(),
// vgpu.QueuePipelineSet (one queue over several devices)
// and the design's add-one example kernel (vgpu.queue_kernels).
#include <pybind11/stl.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "arrays.hpp"
#include "bindings.hpp"
#include "device_arg.hpp"
#include "int_args.hpp"
#include "kernel_source.hpp"
#include "vgpu/error.hpp"
#include "vgpu/lru_map.hpp"
#include "vgpu/persistent_queue.hpp"
#include "vgpu/queue_pipeline_set.hpp"
#include "vgpu/runtime.hpp"
#include "vgpu/queue_kernels.hpp"

namespace py = pybind11;

namespace vgpu::python {

std::optional<std::chrono::milliseconds> timeout_arg(py::handle seconds);  // kernels.cpp
py::dict multi_stats_dict(const MultiStats& s);                            // cache.cpp

namespace {

using std::to_string;

// The C++ queue is a plain container; this one is safe from several Python threads: pushes,
// clears and runs take its mutex, always with the GIL released (a run may need the GIL for a
// cpu= callable while a push waits).
struct PyQueue {
  explicit PyQueue(std::uint64_t max_items) : queue(max_items) {}
  PersistentQueue queue;
  mutable std::mutex mutex;
};

struct PyQueueKernel {
  KernelSource source;
  CompileOptions options;
  std::shared_ptr<CpuCallback> callback;
  // vgpu.run(..., devices=[...]): one QueuePipelineSet per (device ids, config), kept with the
  // kernel so its measured shares carry over from run to run and go when the kernel goes;
  // bounded as every cache of persistent pipelines is (by count and by their buffers' bytes,
  // least recently used out; the environment's limits, as the global runtime's).
  mutable std::mutex sets_mutex;
  mutable LruMap<std::string, std::shared_ptr<QueuePipelineSet>> sets{vgpu::config().persistent_limits()};

  PyQueueKernel() = default;
  PyQueueKernel(const PyQueueKernel&) = delete;
  PyQueueKernel& operator=(const PyQueueKernel&) = delete;
  ~PyQueueKernel() {
    if (PyGILState_Check()) {
      py::gil_scoped_release release;
      sets.erase_if([](const std::string&, const std::shared_ptr<QueuePipelineSet>&) { return true; });
      source = KernelSource();
      callback.reset();
    }
  }
};

struct PyQueueReport {
  std::uint64_t kernel_launches = 0;
  std::uint64_t round_trips = 0;
  py::list results;  // (id, bytes) per item, in queue order
};

std::uint64_t id_arg(py::handle id) { return uint_arg(id, "an item id"); }

void push_bytes(PyQueue& q, std::uint64_t id, const std::string& bytes) {
  py::gil_scoped_release release;
  std::lock_guard lock(q.mutex);
  q.queue.push(id, std::as_bytes(std::span<const char>(bytes.data(), bytes.size())));
}

std::unique_ptr<PyQueueKernel> make_queue_kernel(py::object name, py::object glsl, py::object glsl_shader,
                                                 py::object spirv, py::object cuda, py::object entry, py::object cpu,
                                                 py::object defines, py::object workgroup_size,
                                                 py::object spec_constants) {
  const std::string kernel_name = name.is_none() ? std::string("queue_kernel") : py::str(name).cast<std::string>();
  UserSource u =
      user_source(kernel_name, glsl, glsl_shader, spirv, cuda, entry, cpu, defines, workgroup_size, spec_constants);
  if (!u.reflected_only) {  // CUDA and CPU kernels declare the ABI; GLSL and SPIR-V reflect it
    u.source.bindings = queue_bindings();
    u.source.params_size = sizeof(QueueLaunch);
  }
  if (u.callback) u.callback->default_dtype = DType::u32;  // the ABI's buffers are 32-bit words
  auto k = std::make_unique<PyQueueKernel>();
  k->source = std::move(u.source);
  k->options = std::move(u.options);
  k->callback = std::move(u.callback);
  return k;
}

std::unique_ptr<PyQueueKernel> builtin(KernelSource source) {
  auto k = std::make_unique<PyQueueKernel>();
  k->source = std::move(source);
  return k;
}

const PyQueueKernel& kernel_of(py::handle kernel_obj, const std::string& who) {
  if (!py::isinstance<PyQueueKernel>(kernel_obj))
    fail(ErrorCategory::invalid_argument,
         who + "'s kernel is a " + py::str(kernel_obj.get_type().attr("__name__")).cast<std::string>() +
             ", not a vgpu.QueueKernel.",
         "pass vgpu.queue_kernels.add_one() or a vgpu.QueueKernel(glsl=/glsl_shader=/spirv=/cuda=/cpu=...).");
  return kernel_obj.cast<const PyQueueKernel&>();
}

PyQueue& queue_of(py::handle queue_obj, const std::string& who) {
  if (!py::isinstance<PyQueue>(queue_obj))
    fail(ErrorCategory::invalid_argument,
         who + "'s queue is a " + py::str(queue_obj.get_type().attr("__name__")).cast<std::string>() +
             ", not a vgpu.PersistentQueue.",
         "push the items into a vgpu.PersistentQueue and pass that.");
  return queue_obj.cast<PyQueue&>();
}

QueueConfig config_of(const PyQueueKernel& kernel, py::handle output_bytes, py::handle max_items_per_launch,
                      py::handle timeout, const std::string& who) {
  QueueConfig config;
  config.output_bytes = u32_arg(output_bytes, who + "'s output_bytes");
  config.max_items_per_launch = u32_arg(max_items_per_launch, who + "'s max_items_per_launch");
  if (auto t = timeout_arg(timeout)) {
    if (t->count() == 0)
      fail(ErrorCategory::invalid_argument, who + " got timeout=0, but a queue run's 0 means the device's limit.",
           "pass None for the device's limit, or a positive number of seconds.");
    config.timeout = *t;
  }
  config.options = kernel.options;
  return config;
}

PyQueueReport to_python(const QueueReport& report) {
  PyQueueReport r;
  r.kernel_launches = report.kernel_launches;
  r.round_trips = report.round_trips;
  for (const QueueResult& res : report.results)
    r.results.append(
        py::make_tuple(res.id, py::bytes(reinterpret_cast<const char*>(res.payload.data()), res.payload.size())));
  return r;
}

// vgpu.QueuePipelineSet: the C++ set, plus the kernel's Python callable (kept alive, and its
// protocol followed on every run).
struct PyQueueSet {
  std::unique_ptr<QueuePipelineSet> set;
  std::shared_ptr<CpuCallback> callback;

  PyQueueSet() = default;
  PyQueueSet(const PyQueueSet&) = delete;
  PyQueueSet& operator=(const PyQueueSet&) = delete;
  ~PyQueueSet() {
    if (PyGILState_Check()) {  // closing pipelines may wait for devices: not with the GIL
      py::gil_scoped_release release;
      set.reset();
      callback.reset();
    }
  }
};

std::unique_ptr<PyQueueSet> make_queue_set(py::handle kernel_obj, const std::vector<std::string>& devices,
                                           py::handle output_bytes, py::handle max_items_per_launch,
                                           py::handle timeout) {
  const PyQueueKernel& kernel = kernel_of(kernel_obj, "vgpu.QueuePipelineSet");
  const QueueConfig config = config_of(kernel, output_bytes, max_items_per_launch, timeout, "vgpu.QueuePipelineSet");
  auto s = std::make_unique<PyQueueSet>();
  s->callback = kernel.callback;
  py::gil_scoped_release release;  // opening devices and compiling may take a while
  s->set = std::make_unique<QueuePipelineSet>(DeviceSet(devices), kernel.source, config);
  return s;
}

// The key of kernel's set for ids and config.
std::string set_key(const std::vector<std::string>& ids, const QueueConfig& config) {
  std::string key;
  for (const std::string& id : ids) key += id + ",";
  return key + "|" + to_string(config.output_bytes) + "|" + to_string(config.max_items_per_launch) + "|" +
         to_string(config.timeout.count());
}

// The set kernel keeps for key (made on first use; called with the GIL released). The sets the
// bounds evict go into dropped, for the caller to let go outside the lock.
std::shared_ptr<QueuePipelineSet> set_for(const PyQueueKernel& kernel, const std::string& key,
                                          const std::vector<std::string>& ids, const QueueConfig& config,
                                          std::vector<std::shared_ptr<QueuePipelineSet>>& dropped) {
  std::lock_guard lock(kernel.sets_mutex);  // opening devices and compiling under it: one build per key
  if (auto* found = kernel.sets.find(key)) return *found;
  auto made = std::make_shared<QueuePipelineSet>(DeviceSet(ids), kernel.source, config);
  for (auto& s : kernel.sets.put(key, made, made->buffer_bytes())) dropped.push_back(std::move(s));
  return made;
}

// Accounts for set's buffers after a run (they may have grown), evicting others past the bounds.
void account(const PyQueueKernel& kernel, const std::string& key, const std::shared_ptr<QueuePipelineSet>& set,
             std::vector<std::shared_ptr<QueuePipelineSet>>& dropped) {
  const std::uint64_t bytes = set->buffer_bytes();
  std::lock_guard lock(kernel.sets_mutex);
  if (auto* found = kernel.sets.peek(key); found && *found == set)
    for (auto& s : kernel.sets.resize(key, bytes)) dropped.push_back(std::move(s));
}

PyQueueReport run_queue(py::handle kernel_obj, py::handle queue_obj, py::handle output_bytes,
                        py::handle max_items_per_launch, py::object timeout, py::object device,
                        std::optional<std::vector<std::string>> devices) {
  refuse_inside_cpu_callable("vgpu.run");
  const PyQueueKernel& kernel = kernel_of(kernel_obj, "vgpu.run");
  PyQueue& queue = queue_of(queue_obj, "vgpu.run");
  const QueueConfig config = config_of(kernel, output_bytes, max_items_per_launch, timeout, "vgpu.run");
  if (devices) {
    if (!device.is_none())
      fail(ErrorCategory::invalid_argument, "vgpu.run: both device and devices are given.",
           "pass device= for one device or devices=[...] for a set, not both.");
    const std::string key = set_key(*devices, config);
    std::shared_ptr<QueuePipelineSet> set;
    QueueReport report;
    {
      py::gil_scoped_release release;  // opening devices, compiling and dropping sets may take a while
      std::vector<std::shared_ptr<QueuePipelineSet>> dropped;  // let go after the kernel's lock
      set = set_for(kernel, key, *devices, config, dropped);
    }
    run_released(kernel.callback, [&] {
      std::lock_guard lock(queue.mutex);
      report = set->run(queue.queue);
    });
    {
      py::gil_scoped_release release;
      std::vector<std::shared_ptr<QueuePipelineSet>> dropped;
      account(kernel, key, set, dropped);
      set.reset();  // the last reference when another run evicted it meanwhile
    }
    return to_python(report);
  }
  Device dev = device_arg(device);
  if (!dev) dev = default_device_for(kernel.source);
  QueueReport report;
  run_released(kernel.callback, [&] {
    std::lock_guard lock(queue.mutex);
    report = vgpu::run(dev, kernel.source, config, queue.queue);
  });
  return to_python(report);
}

}  // namespace

void bind_queue(py::module_& m) {
  py::class_<PyQueue>(m, "PersistentQueue",
                      "Work items, each a stable id and a byte payload, in push order (vgpu::PersistentQueue). Run "
                      "them with vgpu.run(kernel, queue): one upload, one launch, one read-back. Safe to use from "
                      "several threads (pushes and runs take turns).")
      .def(py::init([](py::handle max_items) {
             return std::make_unique<PyQueue>(uint_arg(max_items, "max_items", 1, PersistentQueue::kMaxItems));
           }),
           py::arg("max_items") = PersistentQueue::kMaxItems,
           "Makes an empty queue holding at most max_items items (≤ 2**32 - 1).")
      .def(
          "push",
          [](PyQueue& q, py::handle id, py::handle payload) {
            const std::uint64_t i = id_arg(id);
            push_bytes(q, i, buffer_bytes(payload, "payload of item " + to_string(i)));
          },
          py::arg("id"), py::arg("payload"),
          "Appends an item; payload (bytes, bytearray, memoryview or a C-contiguous numpy array) is copied. "
          "Raises InvalidArgument (queue unchanged) for a duplicate id, a full queue or a payload over 4 GiB - 4 "
          "bytes.")
      .def(
          "push_value",
          [](PyQueue& q, py::handle id, py::handle value, py::handle dtype) {
            const std::uint64_t i = id_arg(id);
            const DType d = parse_dtype(dtype, "dtype");
            py::array a = input_array(value, d, "value of item " + to_string(i));
            push_bytes(q, i, std::string(static_cast<const char*>(a.data()), static_cast<std::size_t>(a.nbytes())));
          },
          py::arg("id"), py::arg("value"), py::arg("dtype") = "uint32",
          "Appends an item whose payload is value (a number or array-like) as dtype's bytes (default uint32).")
      .def(
          "__len__",
          [](const PyQueue& q) {
            std::lock_guard lock(q.mutex);
            return q.queue.size();
          },
          "The number of items.", py::call_guard<py::gil_scoped_release>())
      .def_property_readonly(
          "payload_bytes",
          [](const PyQueue& q) {
            py::gil_scoped_release release;  // a run holds the mutex and may need the GIL
            std::lock_guard lock(q.mutex);
            return q.queue.payload_bytes();
          },
          "The sum of the payload lengths in bytes.")
      .def(
          "clear",
          [](PyQueue& q) {
            py::gil_scoped_release release;
            std::lock_guard lock(q.mutex);
            q.queue.clear();
          },
          "Removes every item.")
      .def("__repr__", [](const PyQueue& q) {
        std::size_t items = 0;
        std::uint64_t bytes = 0;
        {
          py::gil_scoped_release release;  // a run holds the mutex and may need the GIL
          std::lock_guard lock(q.mutex);
          items = q.queue.size();
          bytes = q.queue.payload_bytes();
        }
        return "<vgpu.PersistentQueue " + to_string(items) + " items, " + to_string(bytes) + " payload bytes>";
      });

  py::class_<PyQueueKernel>(m, "QueueKernel",
                            "A queue kernel following the queue ABI (docs/queue.md): two bindings (slot 0 read `in`, "
                            "slot 1 read_write `out`) and an 8-byte params block {item_base, item_count}. "
                            "QueueKernel(name=..., glsl= | glsl_shader= | spirv= | cuda= + entry= | cpu=callable, "
                            "defines={}, workgroup_size=(x,), spec_constants={}); vgpu.queue_kernels.add_one() is the "
                            "design's example. A cpu= callable gets a vgpu.CpuWorkgroup whose buffer(0)/buffer(1) are "
                            "the ABI's uint32 words.")
      .def(py::init(&make_queue_kernel), py::kw_only(), py::arg("name") = py::none(), py::arg("glsl") = py::none(),
           py::arg("glsl_shader") = py::none(), py::arg("spirv") = py::none(), py::arg("cuda") = py::none(),
           py::arg("entry") = py::none(), py::arg("cpu") = py::none(), py::arg("defines") = py::none(),
           py::arg("workgroup_size") = py::none(), py::arg("spec_constants") = py::none())
      .def_property_readonly(
          "name", [](const PyQueueKernel& k) { return k.source.name; }, "The kernel's name.")
      .def_property_readonly(
          "dialects",
          [](const PyQueueKernel& k) {
            py::list l;
            for (const DialectSource& s : k.source.sources) l.append(s.dialect);
            return l;
          },
          "The dialects it has (\"glsl\", \"glsl_shader\", \"spirv\", \"cuda\", \"cpu\").")
      .def("__repr__", [](const PyQueueKernel& k) {
        std::string d;
        for (const DialectSource& s : k.source.sources) d += (d.empty() ? "" : ", ") + s.dialect;
        return "<vgpu.QueueKernel '" + k.source.name + "' (" + d + ")>";
      });

  py::class_<PyQueueReport>(m, "QueueReport", "What one queue run did: its launches and one result per item.")
      .def_readonly("kernel_launches", &PyQueueReport::kernel_launches, "Dispatches made (0 for an empty queue).")
      .def_readonly("round_trips", &PyQueueReport::round_trips,
                    "Uploads + read-backs (1 unless buffer limits split the queue; 0 for an empty one).")
      .def_readonly("results", &PyQueueReport::results, "[(id, bytes)] one per item, in queue order.")
      .def(
          "by_id", [](const PyQueueReport& r) { return py::dict(r.results); }, "The results as {id: bytes}.")
      .def(
          "__len__", [](const PyQueueReport& r) { return r.results.size(); }, "The number of results (one per item).")
      .def("__repr__", [](const PyQueueReport& r) {
        return "QueueReport(kernel_launches=" + to_string(r.kernel_launches) +
               ", round_trips=" + to_string(r.round_trips) + ", results=<" + to_string(r.results.size()) + " items>)";
      });

  m.def("run", &run_queue, py::arg("kernel"), py::arg("queue"), py::kw_only(), py::arg("output_bytes") = 0,
        py::arg("max_items_per_launch") = 0, py::arg("timeout") = py::none(), py::arg("device") = py::none(),
        py::arg("devices") = py::none(),
        "Drains queue through kernel (a vgpu.QueueKernel): one result per item in queue order, through the pipeline "
        "kept per (device, kernel, config) for the process, so only the first run compiles, allocates and binds. "
        "output_bytes: bytes the kernel may write per item (0: as many as its payload); max_items_per_launch: 0 = "
        "the device's limits; timeout: seconds (None: the device's limit); device: None = the default device that "
        "takes the kernel; devices=[\"cuda:0\", \"cuda:1\"]: spread the queue over that set (a "
        "vgpu.QueuePipelineSet the kernel keeps per set and config, so its measured shares carry over). The GIL is "
        "released during the run. Raises InvalidArgument for a kernel breaking the ABI, OutOfMemory, Timeout; the "
        "queue is left as it was.");

  py::class_<PyQueueSet>(m, "QueuePipelineSet",
                         "One queue drained over several devices (vgpu::QueuePipelineSet; docs/scale-out.md): a "
                         "pipeline per device, each given a contiguous range of the queue by its measured seconds per "
                         "item in earlier runs (the first run: equal shares); results in queue order, equal to one "
                         "device's. A device that fails has its range rerun on the others and is left out from then "
                         "on. Runs take turns (safe from several threads).")
      .def(py::init(&make_queue_set), py::arg("kernel"), py::kw_only(), py::arg("devices"), py::arg("output_bytes") = 0,
           py::arg("max_items_per_launch") = 0, py::arg("timeout") = py::none(),
           "QueuePipelineSet(kernel, *, devices=[\"cpu:0\", \"cpu:1\"], output_bytes=0, max_items_per_launch=0, "
           "timeout=None): compiles kernel (a vgpu.QueueKernel) on every device of the set (ids as vgpu.Cache's "
           "devices=); a device that cannot take it is left out. Arguments as vgpu.run's.")
      .def(
          "run",
          [](PyQueueSet& s, py::handle queue_obj) {
            refuse_inside_cpu_callable("vgpu.QueuePipelineSet.run");
            PyQueue& queue = queue_of(queue_obj, "vgpu.QueuePipelineSet.run");
            QueueReport report;
            run_released(s.callback, [&] {
              std::lock_guard lock(queue.mutex);
              report = s.set->run(queue.queue);
            });
            return to_python(report);
          },
          py::arg("queue"),
          "Drains queue over the set: a vgpu.QueueReport with one result per item in queue order (launches and "
          "round trips summed over the devices). The GIL is released during the run.")
      .def_property_readonly(
          "devices", [](const PyQueueSet& s) { return s.set->devices().ids(); },
          "The ids of the set's devices, in its order.")
      .def_property_readonly(
          "weights", [](const PyQueueSet& s) { return s.set->weights(); },
          "The weights the next run splits by (sum 1; 0 for a device left out).")
      .def_property_readonly(
          "seconds_per_item", [](const PyQueueSet& s) { return s.set->seconds_per_item(); },
          "Each device's measured seconds per item (0 until it ran a share).")
      .def_property_readonly(
          "left_out", [](const PyQueueSet& s) { return s.set->left_out(); },
          "Per device: True when it failed (or could not compile the kernel) and is left out.")
      .def(
          "stats",
          [](const PyQueueSet& s) {
            const MultiStats st = s.set->stats();
            py::dict d = multi_stats_dict(st);
            d["runs"] = st.batches;  // a queue set's batches are its runs
            return d;
          },
          "Returns Cache.multi_stats()'s dict for the runs: runs (= batches), failures, rerun_items, last_shares "
          "(the last run's split), items (per device) and last_failures.");

  py::module_ qk =
      m.def_submodule("queue_kernels", "The design's example queue kernel: add 1 to each u32 of a payload.");
  qk.def(
      "add_one", [] { return builtin(queue_add_one_kernel()); },
      "The add-one queue kernel with GLSL body, CUDA and CPU forms: each item's output is its payload's whole "
      "u32 words, each plus 1.");
  qk.def(
      "add_one_shader", [] { return builtin(queue_add_one_shader_kernel()); },
      "The add-one queue kernel as a complete GLSL shader only (Vulkan and OpenGL), bindings reflected.");
  qk.def(
      "add_one_glsl", [] { return queue_add_one_glsl(); }, "The add-one kernel's GLSL body (for QueueKernel(glsl=)).");
  qk.def(
      "add_one_glsl_shader", [] { return queue_add_one_glsl_shader(); },
      "The add-one kernel as a complete GLSL shader (for QueueKernel(glsl_shader=)).");
  qk.def(
      "add_one_cuda", [] { return queue_add_one_cuda(); },
      "The add-one kernel's CUDA C; its entry is \"queue_add_one\".");
  m.def(
      "add_one_queue_kernel", [] { return builtin(queue_add_one_kernel()); }, "Same as vgpu.queue_kernels.add_one().");
}

}  // namespace vgpu::python
