// SPDX-License-Identifier: Apache-2.0
// tests/runtime/runtime_options_test.cpp — RuntimeOptions' overrides of the environment: each one set
// in code wins over its VGPU_* variable for that runtime (cache directory, cache on/off, cache
// cap, L1 capacity, CPU ISA, time limit, log threshold and sink), unset ones follow the
// environment, and an override out of range is an invalid_argument naming it, with a Fix hint.
#include <unistd.h>

#include <algorithm>
#include "support/catch.hpp"
#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <vector>

#include "support/cache_fixtures.hpp"
#include "support/capture_stderr.hpp"
#include "support/expect_error.hpp"
#include "support/scale_add_kernel.hpp"
#include "support/scoped_env.hpp"
#include "support/test_backend.hpp"
#include "vgpu/cache/disk_store.hpp"
#include "vgpu/vgpu.hpp"

namespace vgpu_test {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using vgpu::test::entries;
using vgpu::test::TempDir;

/// A name no other test (or earlier run) used.
std::string fresh(const std::string& what) {
  return what + "-" + std::to_string(::getpid()) + "-" +
         std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
}

/// Options over two test devices (the CPU underneath, 1 and 3 ms a dispatch apart): selecting
/// on them calibrates, and the calibrated choice is stored in the runtime's L2 store.
vgpu::RuntimeOptions two_test_devices(const std::string& salt) {
  return test_runtime_options({test_device(1000, salt), test_device(3000, salt)});
}

/// Returns the regular files below dir (none when it does not exist).
std::vector<fs::path> files_below(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  if (!fs::exists(dir, ec)) return out;
  for (const auto& e : fs::recursive_directory_iterator(dir, ec))
    if (e.is_regular_file()) out.push_back(e.path());
  return out;
}

/// Returns whether some file below dir is named key_hex.vgc (an entry of that key, any kind).
bool has_entry_named(const fs::path& dir, const std::string& key_hex) {
  const auto files = files_below(dir);
  return std::any_of(files.begin(), files.end(), [&](const fs::path& p) { return p.stem() == key_hex; });
}

/// The VGPU_CACHE_DIR the test environment sets (ctest gives every test one).
fs::path env_cache_dir() { return vgpu::Config::from_env().cache_dir; }

/// A log sink that keeps every line it gets. Thread-safe.
struct Collected {
  std::mutex mutex;
  std::vector<std::pair<vgpu::LogLevel, std::string>> lines;

  vgpu::LogSink sink() {
    return [this](vgpu::LogLevel level, std::string_view message) {
      std::lock_guard lock(mutex);
      lines.emplace_back(level, std::string(message));
    };
  }
  /// Returns how many lines contain fragment.
  std::size_t count(const std::string& fragment) {
    std::lock_guard lock(mutex);
    return static_cast<std::size_t>(std::count_if(
        lines.begin(), lines.end(), [&](const auto& l) { return l.second.find(fragment) != std::string::npos; }));
  }
};

}  // namespace

TEST_CASE("RuntimeOptions::cache_dir: the runtime's selections and kernels go there, not to VGPU_CACHE_DIR",
          "[runtime_options][cache]") {
  TempDir dir("cache-dir-");
  vgpu::RuntimeOptions o = two_test_devices(fresh("cache-dir"));
  o.cache_dir = dir.path;
  vgpu::Runtime rt(o);
  CHECK(rt.config().cache_dir == dir.path);
  CHECK(rt.config().cache_enabled);
  const vgpu::Selection s = rt.explain("axpy", {4096});
  REQUIRE(s.source == vgpu::SelectionSource::calibrated);
  const auto stored = vgpu::test::selection_entries(dir.path, true);
  REQUIRE(stored.size() == 1);
  CHECK(vgpu::test::selection_pointer_entries(dir.path, true).size() == 1);
  CHECK(stored[0].valid);
  INFO("VGPU_CACHE_DIR is " << env_cache_dir());
  CHECK_FALSE(has_entry_named(env_cache_dir(), stored[0].key_hex));

  // A second runtime with the same directory finds the stored choice there.
  vgpu::RuntimeOptions again = o;
  vgpu::Runtime rt2(again);
  CHECK(rt2.explain("axpy", {4096}).source == vgpu::SelectionSource::persisted);

  // A user GLSL kernel's SPIR-V, where Vulkan runs: written to the runtime's directory only.
  vgpu::RuntimeOptions vk;
  vk.allowed = {vgpu::BackendKind::vulkan};
  vk.cache_dir = dir.path;
  vgpu::Runtime vrt(vk);
  if (const std::string why = vgpu::test::why_unavailable(vrt, vgpu::BackendKind::vulkan); !why.empty()) {
    WARN("SKIPPED the Vulkan part: " << why);
    return;
  }
  vgpu::Device device = vrt.open("vulkan:0");
  vgpu::CompileOptions opt;
  opt.workgroup_size = {64, 1, 1};
  opt.defines["VGPU_TEST_UNIQUE"] = std::to_string(::getpid());  // a key no other run wrote
  device.compile(scale_add_source(vgpu::BackendKind::vulkan, kScaleAddGlsl), opt);
  CHECK(device.counters().l2_writes >= 1);
  const auto spirv = entries(dir.path, vgpu::cache::EntryKind::spirv, true);
  REQUIRE(spirv.size() == 1);
  CHECK_FALSE(has_entry_named(env_cache_dir(), spirv[0].key_hex));
}

TEST_CASE("RuntimeOptions::cache_enabled = false: the runtime writes nothing to disk", "[runtime_options][cache]") {
  TempDir root("cache-off-");
  const fs::path dir = root.path / "never-made";
  vgpu::RuntimeOptions o = two_test_devices(fresh("cache-off"));
  o.cache_dir = dir;
  o.cache_enabled = false;
  vgpu::Runtime rt(o);
  CHECK_FALSE(rt.config().cache_enabled);
  REQUIRE(rt.explain("axpy", {4096}).source == vgpu::SelectionSource::calibrated);
  CHECK(files_below(dir).empty());
  CHECK_FALSE(fs::exists(dir));
  // Without the override the same directory would have been used: the override is what stops it.
  vgpu::RuntimeOptions on = o;
  on.cache_enabled.reset();
  vgpu::Runtime rt_on(on);
  REQUIRE(rt_on.explain("axpy", {4096}).source == vgpu::SelectionSource::calibrated);
  CHECK(vgpu::test::selection_entries(dir, false).size() == 1);
  CHECK(vgpu::test::selection_pointer_entries(dir, false).size() == 1);
}

TEST_CASE("RuntimeOptions::cache_max_bytes caps the runtime's store", "[runtime_options][cache]") {
  TempDir dir("cache-cap-");
  vgpu::RuntimeOptions o = two_test_devices(fresh("cache-cap"));
  o.cache_dir = dir.path;
  o.cache_max_bytes = 64;  // less than any entry: none is written
  vgpu::Runtime rt(o);
  CHECK(rt.config().cache_max_bytes == 64);
  REQUIRE(rt.explain("axpy", {4096}).source == vgpu::SelectionSource::calibrated);
  CHECK(entries(dir.path, vgpu::cache::EntryKind::selection, false).empty());
}

TEST_CASE("RuntimeOptions::l1_capacity bounds each device's L1 of that runtime", "[runtime_options][l1]") {
  vgpu::RuntimeOptions o;
  o.allowed = {vgpu::BackendKind::cpu};
  o.l1_capacity = 2;
  vgpu::Runtime rt(o);
  CHECK(rt.config().l1_capacity == 2);
  vgpu::Device device = rt.open("cpu:0");
  const vgpu::KernelPlan plan = vgpu::ops::mul(device.info(), 8);
  auto variant = [&](const char* v) {
    vgpu::CompileOptions c = plan.options;
    c.defines["VGPU_TEST_L1"] = v;
    return c;
  };
  const auto c0 = device.counters();
  device.compile(plan.source, variant("1"));
  device.compile(plan.source, variant("2"));
  device.compile(plan.source, variant("3"));  // evicts 1
  device.compile(plan.source, variant("1"));  // built again
  const auto d = device.counters() - c0;
  CHECK(d.compiles == 4);
  CHECK(d.l1_evictions == 2);

  // Another runtime without the override keeps the environment's bound (512 by default).
  vgpu::RuntimeOptions plain;
  plain.allowed = {vgpu::BackendKind::cpu};
  vgpu::Runtime rt2(plain);
  CHECK(rt2.config().l1_capacity == vgpu::Config::from_env().l1_capacity);
  vgpu::Device fresh_device = rt2.open("cpu:0");
  for (const char* v : {"1", "2", "3"}) fresh_device.compile(plan.source, variant(v));
  CHECK(fresh_device.counters().l1_evictions == 0);
}

TEST_CASE("RuntimeOptions::cpu_isa picks the CPU backend's instruction set for that runtime",
          "[runtime_options][cpu]") {
  vgpu::RuntimeOptions o;
  o.allowed = {vgpu::BackendKind::cpu};
  o.cpu_isa = "SSE2";  // any case, like the variable
  vgpu::Runtime rt(o);
  CHECK(rt.config().cpu_isa == "sse2");
  const std::vector<vgpu::DeviceInfo> devices = rt.devices();
  REQUIRE(devices.size() == 1);
  INFO(devices[0].driver_version);
  CHECK_THAT(devices[0].driver_version, Catch::Matchers::StartsWith("vgpu-cpu sse2 "));
  // The device computes with that ISA's kernels, and right.
  vgpu::Device device = rt.open("cpu:0");
  const std::uint32_t n = 37;
  std::vector<float> a(n * n, 1.0f), b(n * n, 2.0f), c(n * n, 0.0f);
  vgpu::PersistentKernel mm(device, vgpu::ops::matmul(device.info(), n, n, n));
  mm({vgpu::TensorArg(a.data(), {n, n}), vgpu::TensorArg(b.data(), {n, n}), vgpu::TensorArg(c.data(), {n, n})});
  CHECK(std::count(c.begin(), c.end(), 2.0f * n) == static_cast<std::ptrdiff_t>(c.size()));

  // Without the override the runtime uses VGPU_CPU_ISA's choice (the best, in the test environment).
  vgpu::RuntimeOptions plain;
  plain.allowed = {vgpu::BackendKind::cpu};
  vgpu::Runtime best(plain);
  const vgpu::DeviceInfo best_info = best.devices().at(0);
  if (best_info.driver_version.starts_with("vgpu-cpu sse2 ")) {
    WARN("this CPU's best instruction set is SSE2: the default and the override agree");
  } else {
    CHECK(best_info.fingerprint.hex() != devices[0].fingerprint.hex());  // another ISA is another device identity
  }
}

TEST_CASE("RuntimeOptions::timeout is the limit every device of that runtime starts with",
          "[runtime_options][timeout]") {
  vgpu::RuntimeOptions o;
  o.allowed = {vgpu::BackendKind::cpu};
  o.timeout = 1234ms;
  vgpu::Runtime rt(o);
  CHECK(rt.config().timeout == 1234ms);
  CHECK(rt.open("cpu:0").timeout() == 1234ms);
  // Also on a device of an injected backend (core applies it).
  vgpu::RuntimeOptions t = test_runtime_options({test_device(0, fresh("timeout"))});
  t.timeout = 0ms;
  vgpu::Runtime trt(t);
  CHECK(trt.open("test:0").timeout() == 0ms);
  vgpu::RuntimeOptions plain;
  plain.allowed = {vgpu::BackendKind::cpu};
  CHECK(vgpu::Runtime(plain).open("cpu:0").timeout() == vgpu::Config::from_env().timeout);
}

TEST_CASE("RuntimeOptions::log_sink receives the process's log lines while the runtime lives",
          "[runtime_options][log]") {
  TempDir root("log-sink-");
  const fs::path not_a_dir = root.path / "a-file";
  std::ofstream(not_a_dir) << "x";
  Collected got;
  CaptureStderr err;
  {
    vgpu::RuntimeOptions o = two_test_devices(fresh("log-sink"));
    o.cache_dir = not_a_dir;  // unusable: the store warns once, into the sink
    o.log_sink = got.sink();
    vgpu::Runtime rt(o);
    CHECK_FALSE(rt.explain("axpy", {4096}).device.empty());
    vgpu::log(vgpu::LogLevel::warn, "a line from the test");
    vgpu::log(vgpu::LogLevel::info, "an info line below the default threshold");
  }
  vgpu::log(vgpu::LogLevel::warn, "after the runtime");
  const std::string text = err.text();
  INFO("stderr:\n" << text);
  CHECK(got.count("kernel cache directory '" + not_a_dir.string() + "' is not usable") == 1);
  CHECK(got.count("a line from the test") == 1);
  CHECK(got.count("an info line") == 0);
  CHECK(got.count("after the runtime") == 0);
  CHECK(text.find("is not usable") == std::string::npos);
  CHECK(text.find("a line from the test") == std::string::npos);
  CHECK(text.find("vgpu: warning: after the runtime") != std::string::npos);  // stderr again
}

TEST_CASE("RuntimeOptions::log_level sets the threshold of the lines routed", "[runtime_options][log]") {
  Collected got;
  {
    vgpu::RuntimeOptions o;
    o.allowed = {vgpu::BackendKind::cpu};
    o.log_sink = got.sink();
    o.log_level = vgpu::LogLevel::debug;
    vgpu::Runtime rt(o);
    CHECK(rt.config().log_level == vgpu::LogLevel::debug);
    vgpu::log(vgpu::LogLevel::debug, "debug line");
  }
  {
    vgpu::RuntimeOptions o;
    o.allowed = {vgpu::BackendKind::cpu};
    o.log_sink = got.sink();
    o.log_level = vgpu::LogLevel::error;
    vgpu::Runtime rt(o);
    vgpu::log(vgpu::LogLevel::warn, "warning below error");
    vgpu::log(vgpu::LogLevel::error, "error line");
  }
  CHECK(got.count("debug line") == 1);
  CHECK(got.count("warning below error") == 0);
  CHECK(got.count("error line") == 1);
  // Back to VGPU_LOG's threshold (warn in the test environment): debug is dropped again.
  const std::string text = stderr_of([] { vgpu::log(vgpu::LogLevel::debug, "debug after"); });
  CHECK(text.find("debug after") == std::string::npos);
}

TEST_CASE("a log sink that logs or throws neither deadlocks nor loses vgpu's state", "[runtime_options][log]") {
  int calls = 0;
  std::string text;
  {
    vgpu::RuntimeOptions o;
    o.allowed = {vgpu::BackendKind::cpu};
    o.log_sink = [&](vgpu::LogLevel, std::string_view message) {
      ++calls;
      if (message == "throw") throw std::runtime_error("sink failed");
      vgpu::log(vgpu::LogLevel::warn, "from inside the sink");
    };
    vgpu::Runtime rt(o);
    text = stderr_of([] {
      vgpu::log(vgpu::LogLevel::warn, "first");
      vgpu::log(vgpu::LogLevel::warn, "throw");
    });
  }
  CHECK(calls == 2);
  CHECK(text.find("vgpu: warning: from inside the sink") != std::string::npos);
  CHECK(text.find("vgpu: warning: throw") != std::string::npos);  // the line the sink lost
  CHECK(text.find("vgpu: warning: first") == std::string::npos);
}

TEST_CASE("RuntimeOptions: unset overrides follow the environment as the runtime is made", "[runtime_options][env]") {
  ScopedEnv l1("VGPU_L1_CAPACITY", "3"), ms("VGPU_TIMEOUT_MS", "4321");
  vgpu::RuntimeOptions o;
  o.allowed = {vgpu::BackendKind::cpu};
  vgpu::Runtime from_env(o);
  CHECK(from_env.config().l1_capacity == 3);
  CHECK(from_env.config().timeout == 4321ms);
  CHECK(from_env.open("cpu:0").timeout() == 4321ms);
  o.l1_capacity = 5;
  o.timeout = 10ms;
  vgpu::Runtime overridden(o);
  CHECK(overridden.config().l1_capacity == 5);
  CHECK(overridden.open("cpu:0").timeout() == 10ms);
}

TEST_CASE("RuntimeOptions: an override out of range is an invalid_argument naming it", "[runtime_options][errors]") {
  auto with = [](auto set) {
    vgpu::RuntimeOptions o;
    o.allowed = {vgpu::BackendKind::cpu};
    set(o);
    return o;
  };
  REQUIRE_VGPU_ERROR(invalid_argument, "RuntimeOptions::l1_capacity is 0",
                     vgpu::Runtime{with([](auto& o) { o.l1_capacity = 0; })});
  REQUIRE_VGPU_ERROR(invalid_argument, "RuntimeOptions::l1_capacity is 1048577",
                     vgpu::Runtime{with([](auto& o) { o.l1_capacity = (1u << 20) + 1; })});
  REQUIRE_VGPU_ERROR(invalid_argument, "RuntimeOptions::cache_max_bytes is 0",
                     vgpu::Runtime{with([](auto& o) { o.cache_max_bytes = 0; })});
  REQUIRE_VGPU_ERROR(invalid_argument, "RuntimeOptions::cache_dir is an empty path",
                     vgpu::Runtime{with([](auto& o) { o.cache_dir = fs::path(); })});
  REQUIRE_VGPU_ERROR(invalid_argument, "RuntimeOptions::timeout is -1 ms",
                     vgpu::Runtime{with([](auto& o) { o.timeout = -1ms; })});
  REQUIRE_VGPU_ERROR(invalid_argument, "RuntimeOptions::timeout",
                     vgpu::Runtime{with([](auto& o) { o.timeout = vgpu::kMaxTimeout + 1ms; })});
  REQUIRE_VGPU_ERROR(invalid_argument, "RuntimeOptions::log_level is 7",
                     vgpu::Runtime{with([](auto& o) { o.log_level = static_cast<vgpu::LogLevel>(7); })});
  REQUIRE_VGPU_ERROR(invalid_argument, "RuntimeOptions::cpu_isa='avx9' is not an instruction set",
                     vgpu::Runtime{with([](auto& o) { o.cpu_isa = "avx9"; })});
  // A rejected runtime leaves no log route behind: stderr still gets lines.
  Collected got;
  REQUIRE_VGPU_ERROR(invalid_argument, "l1_capacity", vgpu::Runtime{with([&](auto& o) {
                       o.l1_capacity = 0;
                       o.log_sink = got.sink();
                     })});
  REQUIRE_VGPU_ERROR(invalid_argument, "cpu_isa", vgpu::Runtime{with([&](auto& o) {
                       o.cpu_isa = "avx9";
                       o.log_sink = got.sink();
                     })});
  const std::string text = stderr_of([] { vgpu::log(vgpu::LogLevel::warn, "still stderr"); });
  CHECK(text.find("vgpu: warning: still stderr") != std::string::npos);
  CHECK(got.count("still stderr") == 0);
}

}  // namespace vgpu_test
