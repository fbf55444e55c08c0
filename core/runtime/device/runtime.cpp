// SPDX-License-Identifier: Apache-2.0
// core/runtime/device/runtime.cpp — backend statuses, device enumeration and the open-device table.
#include "vgpu/runtime.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>

#include "device_core.hpp"
#include "registry.hpp"
#include "selection_service.hpp"
#include "vgpu/backend/backend_settings.hpp"
#include "vgpu/backend/device_impl.hpp"
#include "vgpu/backend/exit_order.hpp"
#include "vgpu/config.hpp"
#include "vgpu/backend_list.hpp"
#include "vgpu/error.hpp"
#include "vgpu/log.hpp"

namespace vgpu {
namespace {

/// Throws invalid_argument saying that RuntimeOptions::field holds value, not what it must be.
[[noreturn]] void bad_override(const std::string& field, const std::string& value, const std::string& expected,
                               const char* variable) {
  fail(ErrorCategory::invalid_argument, "RuntimeOptions::" + field + " is " + value + "; it must be " + expected + ".",
       "set it to " + expected + ", or leave it unset to use " + variable + " (or its default).");
}

void check_log_level(const std::optional<LogLevel>& level) {
  if (!level) return;
  const int v = static_cast<int>(*level);
  if (v < static_cast<int>(LogLevel::error) || v > static_cast<int>(LogLevel::debug))
    bad_override("log_level", std::to_string(v), "one of LogLevel's values (error, warn, info, debug)", "VGPU_LOG");
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// VGPU_TUNE has no RuntimeOptions override, so a bad value fails every runtime made.
void check_tune(const Config& c) {
  if (!c.tune_error.empty())
    fail(ErrorCategory::invalid_argument, c.tune_error,
         "set VGPU_TUNE to measure (time the variants once per device, the default) or rules (never measure), "
         "or unset it.");
}

}  // namespace

RuntimeOptions RuntimeOptions::from_env() {
  // The registry names its backends first, so that VGPU_BACKEND may name one beyond vgpu's own.
  detail::known_backends();
  // Running on other devices than the ones asked for would surprise: these are errors.
  const Config c = Config::from_env();
  if (!c.backends_error.empty())
    fail(ErrorCategory::invalid_argument, c.backends_error,
         "set VGPU_BACKEND to a comma list of " + backend_name_list(", ") + ", or unset it.");
  if (!c.device_error.empty())
    fail(ErrorCategory::invalid_argument, c.device_error,
         "set VGPU_DEVICE to backend:index, e.g. vulkan:0 or cpu:0 (vgpu-probe lists the ids), or unset it.");
  check_tune(c);
  RuntimeOptions o;
  o.allowed = c.backends;
  o.forced_device = c.device;
  return o;
}

Config RuntimeOptions::resolve(const Config& env) const {
  check_tune(env);
  Config c = env;
  c.backends = allowed;
  c.backends_error.clear();
  c.device = forced_device;
  c.device_error.clear();
  if (cache_dir) {
    if (cache_dir->empty()) bad_override("cache_dir", "an empty path", "a directory", "VGPU_CACHE_DIR");
    c.cache_dir = *cache_dir;
  }
  if (cache_enabled) c.cache_enabled = *cache_enabled;
  if (cache_max_bytes) {
    if (*cache_max_bytes == 0)
      bad_override("cache_max_bytes", "0", "a positive number of bytes", "VGPU_CACHE_MAX_BYTES");
    c.cache_max_bytes = *cache_max_bytes;
  }
  if (l1_capacity) {
    if (*l1_capacity < 1 || *l1_capacity > (std::size_t{1} << 20))
      bad_override("l1_capacity", std::to_string(*l1_capacity), "a number of kernels from 1 to 1048576",
                   "VGPU_L1_CAPACITY");
    c.l1_capacity = *l1_capacity;
  }
  if (persistent_capacity) {
    if (*persistent_capacity < 1 || *persistent_capacity > PersistentLimits::kMaxCount)
      bad_override("persistent_capacity", std::to_string(*persistent_capacity), "a number of kernels from 1 to 1048576",
                   "VGPU_PERSISTENT_CAPACITY");
    c.persistent_capacity = *persistent_capacity;
  }
  if (persistent_max_bytes) {
    if (*persistent_max_bytes == 0)
      bad_override("persistent_max_bytes", "0", "a positive number of bytes", "VGPU_PERSISTENT_MAX_BYTES");
    c.persistent_max_bytes = *persistent_max_bytes;
  }
  if (cpu_isa) c.cpu_isa = lower(*cpu_isa);  // its names are the CPU backend's to check
  if (cpu_devices) {
    if (*cpu_devices < 1 || *cpu_devices > kMaxCpuDevices)
      bad_override("cpu_devices", std::to_string(*cpu_devices), "1 to " + std::to_string(kMaxCpuDevices) + " devices",
                   "VGPU_CPU_DEVICES");
    c.cpu_devices = *cpu_devices;
  }
  if (timeout) {
    if (timeout->count() < 0 || *timeout > kMaxTimeout)
      bad_override("timeout", std::to_string(timeout->count()) + " ms",
                   "0 ms (no limit) up to " + std::to_string(kMaxTimeout.count()) + " ms", "VGPU_TIMEOUT_MS");
    c.timeout = *timeout;
  }
  if (cuda_graphs) c.cuda_graphs = *cuda_graphs;
  if (background) c.background = *background;
  if (cuda_zero_copy) c.cuda_zero_copy = *cuda_zero_copy;
  if (gl_spirv) c.gl_spirv = *gl_spirv;
  check_log_level(log_level);
  if (log_level) c.log_level = *log_level;
  return c;
}

struct Runtime::State {
  RuntimeOptions options;
  std::shared_ptr<const BackendSettings> settings;  // options over the environment; the L2 store
  std::uint64_t log_token = 0;                      // the log route options asked for (0: none)
  std::mutex mutex;
  std::vector<std::shared_ptr<ComputeBackend>> backends;
  std::vector<BackendKind> kinds;                       // registry order: known_backends(), or the injected ones
  std::unique_ptr<detail::SelectionService> selection;  // the service select/explain/demote forward to
  // What probing one backend found; empty until that backend is first needed.
  struct Probed {
    BackendStatus status;
    std::vector<DeviceInfo> devices;
  };
  std::vector<std::optional<Probed>> probed;  // parallel to kinds
  bool probed_all = false;
  std::vector<BackendStatus> statuses;  // every known kind, registry order (once probed_all)
  std::vector<DeviceInfo> devices;      // every found device, registry order (once probed_all)
  std::map<std::string, std::shared_ptr<detail::DeviceCore>> open;  // by "backend:index"
  // One per kind (parallel to kinds): held while that backend is probed or opens a device.
  // Taken before mutex, never after it.
  std::vector<std::unique_ptr<std::mutex>> kind_mutexes;

  bool allowed(BackendKind k) const {
    return options.allowed.empty() ||
           std::find(options.allowed.begin(), options.allowed.end(), k) != options.allowed.end();
  }

  // Each backend is probed once, and only when first needed: creating a Vulkan instance or a GL
  // context is not free, and probing loads the backend's vendor libraries (libvulkan and its
  // ICDs, libEGL, libcuda) into the process. So opening one device probes only its backend, and
  // a process that only ever uses cpu:0 maps none of them (issue 17). A backend is probed (and
  // its devices opened) under its own mutex, not the runtime's: a background calibration
  // probing CUDA must not hold up a call opening the CPU meanwhile.
  const Probed& probe_kind(std::size_t i) {
    {
      std::lock_guard lock(mutex);
      if (probed[i]) return *probed[i];  // set once, never changed: the reference stays valid
    }
    std::lock_guard probing(*kind_mutexes[i]);
    {
      std::lock_guard lock(mutex);
      if (probed[i]) return *probed[i];
    }
    const BackendKind kind = kinds[i];
    auto it = std::find_if(backends.begin(), backends.end(), [&](auto& b) { return b->kind() == kind; });
    Probed p;
    BackendStatus& st = p.status;
    st.kind = kind;
    if (it == backends.end()) {
      st.reason = std::string("not compiled in (") + detail::build_option(kind) + "=OFF at build time)";
    } else if (!allowed(kind)) {
      st.compiled_in = true;
      st.reason = "excluded by VGPU_BACKEND";
    } else {
      try {
        st = (*it)->status();
        st.compiled_in = true;
        if (st.available) {
          p.devices = (*it)->enumerate();
          if (p.devices.empty()) {
            st.available = false;
            st.reason = "no usable device found";
          }
        }
      } catch (const Error& e) {
        st.available = false;
        st.reason = e.what();
        p.devices.clear();
      }
      // Probing loads the backend's libraries, which register exit handlers of their own.
      driver_exit_handlers_changed();
    }
    std::lock_guard lock(mutex);
    probed[i] = std::move(p);
    return *probed[i];
  }

  // Probes every backend (enumeration: backends(), devices(), a calibration, vgpu-probe).
  void probe_all() {
    for (std::size_t i = 0; i < kinds.size(); ++i) probe_kind(i);
    std::lock_guard lock(mutex);
    if (probed_all) return;
    for (std::size_t i = 0; i < kinds.size(); ++i) {
      statuses.push_back(probed[i]->status);
      devices.insert(devices.end(), probed[i]->devices.begin(), probed[i]->devices.end());
    }
    probed_all = true;
  }

  // Returns the position of kind in the registry order, or kinds.size() when it is not known.
  std::size_t kind_index(BackendKind kind) const {
    return static_cast<std::size_t>(std::find(kinds.begin(), kinds.end(), kind) - kinds.begin());
  }

  ComputeBackend* backend_locked(BackendKind kind) { return backend_shared_locked(kind).get(); }
  std::shared_ptr<ComputeBackend> backend_shared_locked(BackendKind kind) {
    for (auto& b : backends)
      if (b->kind() == kind) return b;
    return nullptr;
  }
};

Runtime::Runtime(RuntimeOptions options) : state_(std::make_unique<State>()) {
  State& st = *state_;
  st.options = std::move(options);
  const RuntimeOptions& o = st.options;
  // The log route comes first, so that what reading the environment and opening the cache
  // directory warn about reaches the sink.
  check_log_level(o.log_level);
  if (o.log_sink || o.log_level) st.log_token = set_log_sink(o.log_sink, o.log_level);
  try {
    auto settings = std::make_shared<BackendSettings>();
    settings->config = o.resolve(Config::from_env());
    settings->cpu_isa_from_code = o.cpu_isa.has_value();
    if (o.cache_dir || o.cache_enabled || o.cache_max_bytes) {
      settings->store = std::make_shared<cache::DiskStore>(cache::DiskStoreOptions::from(settings->config));
    } else {  // the process-wide store, read from the environment once
      settings->store = BackendSettings::process()->store;
      const cache::DiskStoreOptions& used = settings->store->options();
      settings->config.cache_dir = used.directory;
      settings->config.cache_enabled = used.enabled;
      settings->config.cache_max_bytes = used.max_bytes;
    }
    st.settings = settings;
    if (o.backends.empty()) {
      for (auto& b : detail::make_compiled_backends(st.settings)) st.backends.push_back(std::move(b));
      st.kinds = detail::known_backends();
    } else {
      st.backends = o.backends;
      for (auto& b : st.backends) {
        if (!b)
          fail(ErrorCategory::invalid_argument, "RuntimeOptions::backends holds a null backend.",
               "pass only constructed backends, or leave the list empty for the compiled-in ones.");
        const BackendKind kind = b->kind();
        if (const std::string name = b->name(); BackendKind::named(name) != kind)
          fail(ErrorCategory::invalid_argument,
               "backend '" + name + "' reports the kind of backend '" + std::string(to_string(kind)) + "'.",
               "return BackendKind::named(\"" + name + "\") from its kind() (or drop the name() override).");
        st.kinds.push_back(kind);
      }
    }
    st.probed.resize(st.kinds.size());
    for (std::size_t i = 0; i < st.kinds.size(); ++i) st.kind_mutexes.push_back(std::make_unique<std::mutex>());
    // Selection sees the runtime only through these calls (it sits a layer above).
    std::string scope;
    for (BackendKind kind : st.kinds)
      if (st.backend_shared_locked(kind) && st.allowed(kind))
        scope += (scope.empty() ? "" : ",") + std::string(to_string(kind));
    detail::DeviceSource source{[this] { return devices(); }, [this] { return backends(); },
                                [this](const std::string& id) { return open(id); },
                                [this](BackendKind kind) { return backend_devices(kind); }, scope};
    st.selection = std::make_unique<detail::SelectionService>(std::move(source), o.forced_device, settings->store,
                                                              settings->config.background);
  } catch (...) {
    restore_log_sink(st.log_token);  // the destructor does not run for a constructor that throws
    throw;
  }
}

Runtime::~Runtime() {
  const std::uint64_t token = state_->log_token;
  state_->selection->shutdown();  // background calibrations use the devices: they stop first
  state_.reset();                 // what closing the devices logs still reaches the sink
  restore_log_sink(token);
}

const Config& Runtime::config() const noexcept { return state_->settings->config; }

void Runtime::stop_background_work() noexcept { detail::BackgroundWorker::stop_all(); }

Runtime& Runtime::global() {
  // Never destroyed: GPU drivers tear themselves down in their own exit handlers, and
  // destroying devices after that crashes (seen with NVIDIA's Vulkan driver). Every cache
  // artifact is written when it is made, so nothing is lost by skipping the teardown.
  static Runtime* runtime = new Runtime();
  return *runtime;
}

std::vector<BackendStatus> Runtime::backends() {
  state_->probe_all();
  std::lock_guard lock(state_->mutex);
  return state_->statuses;
}

std::vector<DeviceInfo> Runtime::devices() {
  state_->probe_all();
  std::lock_guard lock(state_->mutex);
  return state_->devices;
}

std::vector<DeviceInfo> Runtime::backend_devices(BackendKind kind) {
  const std::size_t i = state_->kind_index(kind);
  if (i == state_->kinds.size()) return {};
  return state_->probe_kind(i).devices;
}

Device Runtime::open(const std::string& id) {
  const auto colon = id.find(':');
  const std::string kind_name = id.substr(0, colon);
  BackendKind kind{};
  try {
    kind = parse_backend_kind(kind_name);
  } catch (const Error&) {
    fail(ErrorCategory::invalid_argument, "device id '" + id + "' does not start with a backend name.",
         "use backend:index, e.g. vulkan:0 or cpu:0 (vgpu-probe lists the ids).");
  }
  // Only the id's own backend is probed: the others' libraries stay unloaded.
  const std::size_t ki = state_->kind_index(kind);
  const DeviceInfo* match = nullptr;
  if (ki < state_->kinds.size())
    for (const DeviceInfo& d : state_->probe_kind(ki).devices)
      if (d.id() == id || (colon == std::string::npos && d.backend == kind)) {
        match = &d;
        break;
      }
  if (match == nullptr) {
    // A failure may probe everything: its Fix hint lists every device there is.
    state_->probe_all();
    std::lock_guard lock(state_->mutex);
    std::string known;
    for (const auto& d : state_->devices) known += (known.empty() ? "" : ", ") + d.id();
    std::string why;
    for (const auto& st : state_->statuses)
      if (st.kind == kind && !st.available) why = " (" + std::string(to_string(kind)) + ": " + st.reason + ")";
    fail(ErrorCategory::unavailable, "no device '" + id + "' on this machine" + why + ".",
         "pick one of the available devices: " + (known.empty() ? std::string("none") : known) + ".");
  }
  // Devices are stored under their canonical id, so "cpu" and "cpu:0" share one device. A lost
  // device is handed out as it is: its next call recovers it in place (DeviceCore::recover),
  // through the backend, which the reopen function keeps alive.
  {
    std::lock_guard lock(state_->mutex);
    if (auto it = state_->open.find(match->id()); it != state_->open.end()) return it->second->handle();
  }
  // Opened under the backend's own mutex (a context creation can take long), then published.
  std::lock_guard opening(*state_->kind_mutexes[ki]);
  {
    std::lock_guard lock(state_->mutex);
    if (auto it = state_->open.find(match->id()); it != state_->open.end()) return it->second->handle();
  }
  std::shared_ptr<ComputeBackend> backend = state_->backend_shared_locked(match->backend);
  const std::uint32_t index = match->index;
  auto core = std::make_shared<detail::DeviceCore>(
      backend->open(index), state_->settings->config,
      [backend, index] {
        auto impl = backend->open(index);
        driver_exit_handlers_changed();  // reopened after a loss: the same holds
        return impl;
      },
      state_->settings->store);
  driver_exit_handlers_changed();  // a context or device may register the driver's exit handlers
  std::lock_guard lock(state_->mutex);
  state_->open[match->id()] = core;
  return core->handle();
}

Device Runtime::open(const DeviceInfo& info) { return open(info.id()); }

Device Runtime::default_device() {
  if (!state_->options.forced_device.empty()) return open(state_->options.forced_device);
  auto all = devices();
  if (all.empty())
    fail(ErrorCategory::unavailable, "no compute device is available (VGPU_BACKEND may exclude the CPU backend).",
         "unset VGPU_BACKEND or include cpu in it; run vgpu-probe to see why each backend is unavailable.");
  return open(all.front());
}

Selection Runtime::explain(const std::string& op, const Shape& shape, const PlanFactory& factory) {
  return state_->selection->explain(op, shape, factory);
}

Selection Runtime::choose(const std::string& op, const Shape& shape, const PlanFactory& factory) {
  return state_->selection->explain(op, shape, factory, /*interim_ok=*/true);
}

Selection Runtime::recalibrate(const std::string& op, const Shape& shape, const PlanFactory& factory) {
  return state_->selection->recalibrate(op, shape, factory);
}

bool Runtime::settle(std::chrono::milliseconds timeout) { return state_->selection->settle(timeout); }

BackgroundStats Runtime::background_stats() const noexcept { return state_->selection->background_stats(); }

Device Runtime::select(const std::string& op, const Shape& shape, const PlanFactory& factory) {
  return open(explain(op, shape, factory).device);
}

bool Runtime::demote(const std::string& op, const Shape& shape, const Device& device, const std::string& reason) {
  if (!device)
    fail(ErrorCategory::invalid_argument, "Runtime::demote needs an open device.", "pass the device that failed.");
  return state_->selection->demote(op, shape, device.info().id(), reason);
}

std::uint64_t Runtime::selection_epoch() const noexcept { return state_->selection->epoch(); }

CounterSnapshot Runtime::counters() {
  std::lock_guard lock(state_->mutex);
  CounterSnapshot sum;
  for (auto& [id, core] : state_->open) sum = sum + core->counters().snapshot();
  return sum;
}

}  // namespace vgpu
