// SPDX-License-Identifier: Apache-2.0
// core/base/src/config.cpp — reading and validating every VGPU_* environment variable.
// The rule for each is here; nothing else in vgpu calls getenv for a VGPU_* name (a test
// checks that, and that the README's table lists config_variables()).
#include "vgpu/config.hpp"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <set>

#include "vgpu/backend_list.hpp"
#include "trim.hpp"
#include "vgpu/platform/system_info.hpp"

extern char** environ;

namespace vgpu {
namespace {

using detail::trim;

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

/// Returns the variable's value, or nothing when unset (an empty value counts as unset).
std::optional<std::string> env(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return std::nullopt;
  return std::string(v);
}

/// The warnings of one reading of the environment; logged once it is complete (logging
/// reads the configuration itself, so nothing may be logged while it is being read).
using Warnings = std::vector<std::string>;

/// "ignoring NAME='value' (expected ...); using ... Fix: ..."
void bad_value(Warnings& w, std::string_view name, std::string_view value, std::string_view expected,
               std::string_view used) {
  w.push_back("ignoring " + std::string(name) + "='" + std::string(value) + "' (expected " + std::string(expected) +
              "); using " + std::string(used) + ". Fix: set " + std::string(name) + " to " + std::string(expected) +
              ", or unset it.");
}

/// Levenshtein distance, for "did you mean" on unknown names.
std::size_t distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

/// Warns once per unknown VGPU_* name in the environment.
void check_names(Warnings& w) {
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string_view entry(*e);
    if (!entry.starts_with("VGPU_")) continue;
    const std::string_view name = entry.substr(0, entry.find('='));
    const auto& known = config_variables();
    if (std::any_of(known.begin(), known.end(), [&](const ConfigVariable& v) { return v.name == name; })) continue;
    std::string_view nearest;
    std::size_t best = SIZE_MAX;
    for (const ConfigVariable& v : known)
      if (std::size_t d = distance(name, v.name); d < best) best = d, nearest = v.name;
    std::string hint = best <= 3 ? "did you mean " + std::string(nearest) + "? " : "";
    w.push_back("the environment sets " + std::string(name) + ", which vgpu does not know; it has no effect. Fix: " +
                hint + "see the README's table of VGPU_* variables, or unset it.");
  }
}

std::filesystem::path default_cache_dir() {
  if (auto v = env("VGPU_CACHE_DIR")) return *v;
  // The OS's per-user cache folder (XDG on Linux, ~/Library/Caches, %LOCALAPPDATA%).
  const std::filesystem::path root = platform::user_cache_root();
  return root.empty() ? root : root / "vgpu";
}

void read_backends(Config& c) {
  const auto v = env("VGPU_BACKEND");
  if (!v) return;
  std::string_view rest = *v;
  while (!rest.empty()) {
    const auto comma = rest.find(',');
    const std::string item = lower(trim(rest.substr(0, comma)));
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    if (item.empty()) continue;
    const std::optional<BackendKind> k = find_backend_kind(item);
    if (k && std::find(c.backends.begin(), c.backends.end(), *k) == c.backends.end()) c.backends.push_back(*k);
    if (!k) {
      c.backends_error = "VGPU_BACKEND='" + *v + "' names unknown backend '" + item + "'.";
      c.backends.clear();
      return;
    }
  }
  if (c.backends.empty()) c.backends_error = "VGPU_BACKEND='" + *v + "' names no backend.";
}

void read_device(Config& c) {
  const auto v = env("VGPU_DEVICE");
  if (!v) return;
  const std::string id = lower(trim(*v));
  const auto colon = id.find(':');
  const std::string kind = id.substr(0, colon);
  const bool known_kind = find_backend_kind(kind).has_value();
  const bool index_ok =
      colon == std::string::npos || config_parse::integer(std::string_view(id).substr(colon + 1), 0, 1u << 20);
  if (!known_kind || !index_ok) {
    c.device_error = "VGPU_DEVICE='" + *v + "' is not a device id.";
    return;
  }
  c.device = id;
}

void read_log(Config& c, Warnings& w) {
  const auto v = env("VGPU_LOG");
  if (!v) return;
  const std::string s = lower(trim(*v));
  if (s == "error" || s == "quiet")
    c.log_level = LogLevel::error;
  else if (s == "warn" || s == "warning")
    c.log_level = LogLevel::warn;
  else if (s == "info")
    c.log_level = LogLevel::info;
  else if (s == "debug")
    c.log_level = LogLevel::debug;
  else
    bad_value(w, "VGPU_LOG", *v, "error, warn, info or debug", "warn");
}

bool read_bool(Warnings& w, const char* name, bool fallback) {
  const auto v = env(name);
  if (!v) return fallback;
  if (auto b = config_parse::boolean(*v)) return *b;
  bad_value(w, name, *v, "1 or 0 (true/false, yes/no, on/off)", fallback ? "1" : "0");
  return fallback;
}

void read_numbers(Config& c, Warnings& w) {
  if (const auto v = env("VGPU_L1_CAPACITY")) {
    if (auto n = config_parse::integer(*v, 1, 1u << 20))
      c.l1_capacity = static_cast<std::size_t>(*n);
    else
      bad_value(w, "VGPU_L1_CAPACITY", *v, "a whole number of kernels from 1 to 1048576",
                std::to_string(c.l1_capacity));
  }
  if (const auto v = env("VGPU_PERSISTENT_CAPACITY")) {
    if (auto n = config_parse::integer(*v, 1, PersistentLimits::kMaxCount))
      c.persistent_capacity = static_cast<std::size_t>(*n);
    else
      bad_value(w, "VGPU_PERSISTENT_CAPACITY", *v, "a whole number of kernels from 1 to 1048576",
                std::to_string(c.persistent_capacity));
  }
  if (const auto v = env("VGPU_PERSISTENT_MAX_BYTES")) {
    if (auto n = config_parse::bytes(*v))
      c.persistent_max_bytes = *n;
    else
      bad_value(w, "VGPU_PERSISTENT_MAX_BYTES", *v, "a positive byte count such as 1073741824 or 1G",
                std::to_string(c.persistent_max_bytes >> 20) + " MiB");
  }
  if (const auto v = env("VGPU_CACHE_MAX_BYTES")) {
    if (auto n = config_parse::bytes(*v))
      c.cache_max_bytes = *n;
    else
      bad_value(w, "VGPU_CACHE_MAX_BYTES", *v, "a positive byte count such as 268435456 or 256M",
                std::to_string(c.cache_max_bytes >> 20) + " MiB");
  }
  if (const auto v = env("VGPU_CPU_DEVICES")) {
    if (auto n = config_parse::integer(*v, 1, kMaxCpuDevices))
      c.cpu_devices = static_cast<std::uint32_t>(*n);
    else
      bad_value(w, "VGPU_CPU_DEVICES", *v, "a whole number of devices from 1 to " + std::to_string(kMaxCpuDevices),
                std::to_string(c.cpu_devices));
  }
  if (const auto v = env("VGPU_TIMEOUT_MS")) {
    if (auto n = config_parse::integer(*v, 0, static_cast<std::uint64_t>(kMaxTimeout.count())))
      c.timeout = std::chrono::milliseconds(*n);
    else
      bad_value(w, "VGPU_TIMEOUT_MS", *v, "a whole number of milliseconds (0 for no limit)",
                std::to_string(c.timeout.count()) + " ms");
  }
}

std::mutex& warned_mutex() {
  static std::mutex& m = *new std::mutex();  // leaked with the set it guards: background threads warn too
  return m;
}

}  // namespace

namespace config_parse {

std::optional<bool> boolean(std::string_view text) noexcept {
  const std::string s = lower(trim(text));
  if (s == "1" || s == "true" || s == "yes" || s == "on") return true;
  if (s == "0" || s == "false" || s == "no" || s == "off") return false;
  return std::nullopt;
}

std::optional<std::uint64_t> integer(std::string_view text, std::uint64_t min, std::uint64_t max) noexcept {
  if (text.empty() || text.size() > 20) return std::nullopt;
  std::uint64_t value = 0;
  for (char ch : text) {
    if (ch < '0' || ch > '9') return std::nullopt;
    const auto d = static_cast<std::uint64_t>(ch - '0');
    if (value > (UINT64_MAX - d) / 10) return std::nullopt;
    value = value * 10 + d;
  }
  if (value < min || value > max) return std::nullopt;
  return value;
}

std::optional<std::uint64_t> bytes(std::string_view text) noexcept {
  std::size_t i = 0;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
  const auto value = integer(text.substr(0, i), 1, UINT64_MAX);
  if (!value) return std::nullopt;
  const std::string suffix = lower(text.substr(i));
  if (suffix.empty()) return value;
  const std::string_view units = "kmgt";
  const auto u = units.find(suffix[0]);
  if (u == std::string_view::npos || !(suffix.size() == 1 || suffix.substr(1) == "ib")) return std::nullopt;
  const int shift = 10 * static_cast<int>(u + 1);
  if (*value > (UINT64_MAX >> shift)) return std::nullopt;
  return *value << shift;
}

}  // namespace config_parse

void config_warning(const std::string& message) {
  static std::set<std::string>& warned = *new std::set<std::string>();  // leaked: background threads warn too
  {
    std::lock_guard lock(warned_mutex());
    if (!warned.insert(message).second) return;
  }
  log(LogLevel::warn, message);
}

const std::vector<ConfigVariable>& config_variables() {
  // Never destroyed: a background thread may check a variable while the process exits.
  static const std::vector<ConfigVariable>& all = *new std::vector<ConfigVariable>{
      {"VGPU_BACKEND", "comma list of backends to use (" + backend_name_list(", ") + "); default: all compiled in"},
      {"VGPU_DEVICE", "force one device, as backend:index (e.g. vulkan:1)"},
      {"VGPU_LOG", "stderr log threshold: error, warn (default), info or debug"},
      {"VGPU_L1_CAPACITY", "compiled kernels the in-RAM cache keeps per device, 1 to 1048576 (default 512)"},
      {"VGPU_PERSISTENT_CAPACITY",
       "live persistent kernels (with their buffers) one KernelDatabase, Cache or vgpu::run's pipeline cache (per "
       "device) keeps, least recently used out, 1 to 1048576 (default 64)"},
      {"VGPU_PERSISTENT_MAX_BYTES",
       "bytes of device memory the buffers of those kernels hold per cache at most, bytes or with K/M/G suffix "
       "(default 1G)"},
      {"VGPU_CPU_ISA",
       "force the CPU backend's kernels: sse2, avx2 or avx512 on x86-64, neon64 on AArch64, portable (no intrinsics) "
       "anywhere (default: the best this CPU has)"},
      {"VGPU_CPU_DEVICES",
       "logical CPU devices cpu:0 ... cpu:N-1 the CPU backend exposes, 1 to 64 (default 1; they share one thread pool: "
       "for testing multi-device code)"},
      {"VGPU_DEVICES",
       "the devices a default DeviceSet (and vgpu.Cache(devices=...)) spreads work over, comma list of backend:index "
       "(default: every device)"},
      {"VGPU_CUDA_GRAPHS", "0: the CUDA backend replays nothing as a CUDA graph (default 1)"},
      {"VGPU_CUDA_ZERO_COPY", "0: small CUDA round trips copy with memcpys, not the copy kernel (default 1)"},
      {"VGPU_GL_SPIRV",
       "0: OpenGL runs complete shaders and SPIR-V as GLSL cross-compiled by SPIRV-Cross, never through "
       "GL_ARB_gl_spirv (default 1)"},
      {"VGPU_MATMUL_TILING",
       "force the matmul variant: Vulkan/OpenGL naive or BMxBNxBKxTMxTN, CUDA BMxBNxBKxTMxTN[wWMxWN], e.g. "
       "128x128x8x8x8 (default: chosen per shape and device)"},
      {"VGPU_TUNE",
       "measure (default): time the variants a backend offers for an op (matmul tilings) once per device and size "
       "class and keep the fastest in the cache; rules: never measure, the backend's rule picks"},
      {"VGPU_BACKGROUND",
       "0: a call whose device is still being chosen waits for the calibration; 1 (default): it runs on the CPU "
       "meanwhile and the calibration runs on a background thread"},
      {"VGPU_VULKAN_VALIDATION",
       "1: Vulkan runs with VK_LAYER_KHRONOS_validation, each message logged as an error (default 0)"},
      {"VGPU_DEVICE_TIMING",
       "1: every device that can time its dispatches on the device does so from opening (counters "
       "timed_dispatches, device_ns; Device::dispatch_times; explain's device times) (default 0)"},
      {"VGPU_CACHE_DIR", "the on-disk kernel cache directory (default $XDG_CACHE_HOME/vgpu or ~/.cache/vgpu)"},
      {"VGPU_CACHE_DISABLE", "1: no on-disk cache, compiled kernels stay in memory (default 0)"},
      {"VGPU_CACHE_MAX_BYTES", "cap on the on-disk cache, bytes or with K/M/G suffix (default 512M)"},
      {"VGPU_TIMEOUT_MS", "limit on any wait for device work, in ms; 0: no limit (default 60000)"},
      {"VGPU_TEST_BACKENDS", "tests: comma list of backends the conformance suite runs against"},
      {"VGPU_TESTING_HOOKS", "tests: the test hooks library (libvgpu_testing_hooks.so) Python tests load before vgpu"},
      {"VGPU_BENCH_BACKENDS", "benchmarks: comma list of backends vgpu-bench-gpu measures"},
      {"VGPU_BENCH_CPU_SIZES", "benchmarks: comma list of matmul sizes vgpu-bench-cpu-matmul/-kernels measure"},
      {"VGPU_BENCH_CPU_NO_STREAM", "benchmarks: set to skip vgpu-bench-cpu-matmul's STREAM section"},
      {"VGPU_BENCH_OPENBLAS_ENV", "benchmarks: internal, set when vgpu-bench-cpu-matmul re-executes itself"},
      {"VGPU_BENCH_OPENBLAS_AUTODETECTED", "benchmarks: internal, set when vgpu-bench-cpu-matmul re-executes itself"},
      {"VGPU_JOBS", "tools/dev.sh: build parallelism (default 2)"},
  };
  return all;
}

namespace {

Config read_env(Warnings& w) {
  Config c;
  read_backends(c);
  read_device(c);
  read_log(c, w);
  if (const auto v = env("VGPU_CPU_ISA")) c.cpu_isa = lower(trim(*v));
  c.cuda_graphs = read_bool(w, "VGPU_CUDA_GRAPHS", true);
  c.cuda_zero_copy = read_bool(w, "VGPU_CUDA_ZERO_COPY", true);
  c.gl_spirv = read_bool(w, "VGPU_GL_SPIRV", true);
  c.vulkan_validation = read_bool(w, "VGPU_VULKAN_VALIDATION", false);
  c.device_timing = read_bool(w, "VGPU_DEVICE_TIMING", false);
  c.background = read_bool(w, "VGPU_BACKGROUND", true);
  // Checked against the known tilings by the GLSL tuner (core/kernels/src/gpu_tuning.cpp), which
  // owns that list; a bad name fails each matmul plan with the list in its Fix.
  if (const auto v = env("VGPU_MATMUL_TILING")) c.matmul_tiling = lower(trim(*v));
  if (const auto v = env("VGPU_TUNE")) {
    const std::string t = lower(trim(*v));
    if (t == "measure" || t == "rules")
      c.tune = t;
    else
      c.tune_error = "VGPU_TUNE='" + *v + "' is not a tuning mode.";
  }
  c.cache_dir = default_cache_dir();
  c.cache_enabled = !read_bool(w, "VGPU_CACHE_DISABLE", false);
  if (const auto v = env("VGPU_DEVICES")) {
    std::string_view rest = *v;
    while (true) {  // empty items are kept: DeviceSet reports them with their position
      const std::size_t comma = rest.find(',');
      c.devices.emplace_back(trim(rest.substr(0, comma)));
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
  }
  read_numbers(c, w);
  check_names(w);
  return c;
}

}  // namespace

Config Config::from_env() {
  Warnings w;
  Config c = read_env(w);
  for (const std::string& m : w) config_warning(m);
  return c;
}

const Config& config() {
  struct Loaded {
    Warnings warnings;
    Config config;
  };
  static const Loaded loaded = [] {
    Loaded l;
    l.config = read_env(l.warnings);
    return l;
  }();
  // The first caller logs the warnings; log() calls config() again, which then returns at once.
  static std::atomic<bool> logged{false};
  if (!logged.exchange(true))
    for (const std::string& m : loaded.warnings) config_warning(m);
  return loaded.config;
}

}  // namespace vgpu
