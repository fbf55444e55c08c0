// SPDX-License-Identifier: Apache-2.0
// core/runtime/device/runtime.cpp — a Runtime: its settings, its devices (DeviceCatalog) and its selection
// service, which it makes and forwards to.
#include "vgpu/runtime.hpp"

#include <algorithm>
#include <cctype>
#include <optional>

#include "device_catalog.hpp"
#include "registry.hpp"
#include "selection_service.hpp"
#include "vgpu/backend/backend_settings.hpp"
#include "vgpu/backend/compute_backend.hpp"
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
  // The devices: below both this runtime and its selection service, which reaches devices
  // through it (a DeviceSource over the catalog), never through the Runtime that owns it.
  std::shared_ptr<detail::DeviceCatalog> catalog;
  std::unique_ptr<detail::SelectionService> selection;  // the service select/explain/demote forward to
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
    std::vector<std::shared_ptr<ComputeBackend>> backends;
    std::vector<BackendKind> kinds;  // registry order: known_backends(), or the injected ones
    if (o.backends.empty()) {
      for (auto& b : detail::make_compiled_backends(st.settings)) backends.push_back(std::move(b));
      kinds = detail::known_backends();
    } else {
      backends = o.backends;
      for (auto& b : backends) {
        if (!b)
          fail(ErrorCategory::invalid_argument, "RuntimeOptions::backends holds a null backend.",
               "pass only constructed backends, or leave the list empty for the compiled-in ones.");
        const BackendKind kind = b->kind();
        if (const std::string name = b->name(); BackendKind::named(name) != kind)
          fail(ErrorCategory::invalid_argument,
               "backend '" + name + "' reports the kind of backend '" + std::string(to_string(kind)) + "'.",
               "return BackendKind::named(\"" + name + "\") from its kind() (or drop the name() override).");
        kinds.push_back(kind);
      }
    }
    st.catalog = std::make_shared<detail::DeviceCatalog>(st.settings, std::move(backends), std::move(kinds), o.allowed);
    const std::shared_ptr<detail::DeviceCatalog> catalog = st.catalog;  // the lambdas share it
    detail::DeviceSource source{[catalog] { return catalog->devices(); }, [catalog] { return catalog->backends(); },
                                [catalog](const std::string& id) { return catalog->open(id); },
                                [catalog](BackendKind kind) { return catalog->backend_devices(kind); },
                                catalog->scope()};
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

std::vector<BackendStatus> Runtime::backends() { return state_->catalog->backends(); }

std::vector<DeviceInfo> Runtime::devices() { return state_->catalog->devices(); }

std::vector<DeviceInfo> Runtime::backend_devices(BackendKind kind) { return state_->catalog->backend_devices(kind); }

Device Runtime::open(const std::string& id) { return state_->catalog->open(id); }

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

CounterSnapshot Runtime::counters() { return state_->catalog->counters(); }

}  // namespace vgpu
