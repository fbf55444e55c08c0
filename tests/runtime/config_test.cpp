// SPDX-License-Identifier: Apache-2.0
// tests/runtime/config_test.cpp — every VGPU_* variable has one validation rule: a bad value is a
// warning with a Fix hint (the default is used) or, where running on would surprise, an error;
// an unknown VGPU_* name is warned about with the nearest known name.
#include <fcntl.h>
#include <unistd.h>

#include "support/catch.hpp"
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "support/capture_stderr.hpp"
#include "support/helper_path.hpp"
#include "support/scoped_env.hpp"
#include "vgpu/config.hpp"
#include "vgpu/error.hpp"
#include "vgpu/runtime.hpp"

#ifndef VGPU_PROBE
#error "VGPU_PROBE (path of vgpu-probe) must be defined by the build"
#endif

using vgpu::Config;
using vgpu_test::CaptureStderr;
using vgpu_test::ScopedEnv;

namespace {

/// Reads the environment with name=value set and returns the config and the warnings printed.
std::pair<Config, std::string> read_with(const std::string& name, const std::string& value) {
  ScopedEnv env(name, value);
  CaptureStderr capture;
  Config c = Config::from_env();
  return {c, capture.text()};
}

/// Checks that a warning names the variable and its value and ends with a Fix hint.
void check_warned(const std::string& log, const std::string& name, const std::string& value) {
  INFO(log);
  CHECK(log.find(name + "='" + value + "'") != std::string::npos);
  CHECK(log.find("Fix:") != std::string::npos);
  CHECK(log.find("vgpu: warning:") != std::string::npos);
}

}  // namespace

TEST_CASE("config: a bad VGPU_L1_CAPACITY is a warning and keeps 512", "[config]") {
  for (const char* bad : {"-1", "99999999999999999999", "0", "12abc", "2000000"}) {
    auto [c, log] = read_with("VGPU_L1_CAPACITY", bad);
    CHECK(c.l1_capacity == 512);
    check_warned(log, "VGPU_L1_CAPACITY", bad);
  }
  auto [c, log] = read_with("VGPU_L1_CAPACITY", "7");
  CHECK(c.l1_capacity == 7);
  CHECK(log.empty());
  // Numbers are digits only: a blank or a sign is a mistake worth a warning.
  check_warned(read_with("VGPU_L1_CAPACITY", " 7").second, "VGPU_L1_CAPACITY", " 7");
}

TEST_CASE("config: bad VGPU_PERSISTENT_CAPACITY / _MAX_BYTES are warnings and keep 64 / 1 GiB", "[config]") {
  for (const char* bad : {"-1", "0", "12abc", "2000000", " 7"}) {
    auto [c, log] = read_with("VGPU_PERSISTENT_CAPACITY", bad);
    CHECK(c.persistent_capacity == 64);
    check_warned(log, "VGPU_PERSISTENT_CAPACITY", bad);
  }
  for (const char* bad : {"0", "-5", "1X", "lots"}) {
    auto [c, log] = read_with("VGPU_PERSISTENT_MAX_BYTES", bad);
    CHECK(c.persistent_max_bytes == (std::uint64_t{1} << 30));
    check_warned(log, "VGPU_PERSISTENT_MAX_BYTES", bad);
  }
  auto [c, log] = read_with("VGPU_PERSISTENT_CAPACITY", "16");
  CHECK(c.persistent_capacity == 16);
  CHECK(log.empty());
  CHECK(read_with("VGPU_PERSISTENT_MAX_BYTES", "256M").first.persistent_max_bytes == (std::uint64_t{256} << 20));
  CHECK(read_with("VGPU_PERSISTENT_MAX_BYTES", "4096").first.persistent_max_bytes == 4096);
}

TEST_CASE("config: a bad VGPU_LOG is a warning and means warn", "[config]") {
  auto [c, log] = read_with("VGPU_LOG", "garbage");
  CHECK(c.log_level == vgpu::LogLevel::warn);
  check_warned(log, "VGPU_LOG", "garbage");
  CHECK(read_with("VGPU_LOG", "DEBUG").first.log_level == vgpu::LogLevel::debug);
  CHECK(read_with("VGPU_LOG", "error").first.log_level == vgpu::LogLevel::error);
}

TEST_CASE("config: booleans take 1/0, true/false, yes/no, on/off and warn otherwise", "[config]") {
  auto [c, log] = read_with("VGPU_CACHE_DISABLE", "maybe");
  CHECK(c.cache_enabled);
  check_warned(log, "VGPU_CACHE_DISABLE", "maybe");
  CHECK_FALSE(read_with("VGPU_CACHE_DISABLE", "Yes").first.cache_enabled);
  CHECK(read_with("VGPU_CACHE_DISABLE", "off").first.cache_enabled);
  auto [g, glog] = read_with("VGPU_CUDA_GRAPHS", "nope");
  CHECK(g.cuda_graphs);
  check_warned(glog, "VGPU_CUDA_GRAPHS", "nope");
  CHECK_FALSE(read_with("VGPU_CUDA_ZERO_COPY", "false").first.cuda_zero_copy);
}

TEST_CASE("config: VGPU_CACHE_MAX_BYTES and VGPU_TIMEOUT_MS", "[config]") {
  CHECK(read_with("VGPU_CACHE_MAX_BYTES", "256M").first.cache_max_bytes == (256ull << 20));
  CHECK(read_with("VGPU_CACHE_MAX_BYTES", "1GiB").first.cache_max_bytes == (1ull << 30));
  for (const char* bad : {"0", "-5", "12Q", "99999999999999999999T"}) {
    auto [c, log] = read_with("VGPU_CACHE_MAX_BYTES", bad);
    CHECK(c.cache_max_bytes == (512ull << 20));
    check_warned(log, "VGPU_CACHE_MAX_BYTES", bad);
  }
  CHECK(read_with("VGPU_TIMEOUT_MS", "0").first.timeout.count() == 0);
  CHECK(read_with("VGPU_TIMEOUT_MS", "250").first.timeout.count() == 250);
  for (const char* bad : {"soon", "-1", "1.5"}) {
    auto [c, log] = read_with("VGPU_TIMEOUT_MS", bad);
    CHECK(c.timeout.count() == 60000);
    check_warned(log, "VGPU_TIMEOUT_MS", bad);
  }
}

TEST_CASE("config: an unknown VGPU_* name is warned about once, with the nearest known name", "[config]") {
  auto [c, log] = read_with("VGPU_CACHEDIR", "/tmp/x");
  INFO(log);
  CHECK(log.find("VGPU_CACHEDIR") != std::string::npos);
  CHECK(log.find("did you mean VGPU_CACHE_DIR?") != std::string::npos);
  CHECK(log.find("Fix:") != std::string::npos);
  // Once per process: reading again prints nothing more.
  CHECK(read_with("VGPU_CACHEDIR", "/tmp/x").second.empty());
  // A name far from every known one gets no suggestion, still a warning.
  auto [c2, log2] = read_with("VGPU_SOMETHING_ELSE_ENTIRELY", "1");
  CHECK(log2.find("VGPU_SOMETHING_ELSE_ENTIRELY") != std::string::npos);
  CHECK(log2.find("did you mean") == std::string::npos);
}

TEST_CASE("config: a misspelt backend or a malformed device id is an error", "[config]") {
  {
    ScopedEnv env("VGPU_BACKEND", "vulkan,cdua");
    try {
      (void)vgpu::RuntimeOptions::from_env();
      FAIL("no error");
    } catch (const vgpu::Error& e) {
      CHECK(e.category() == vgpu::ErrorCategory::invalid_argument);
      CHECK(std::string(e.what()).find("'cdua'") != std::string::npos);
      CHECK(std::string(e.what()).find("Fix:") != std::string::npos);
    }
  }
  for (const char* bad : {"vulkan:x", "gpu:0", "cpu:-1", ":0"}) {
    ScopedEnv env("VGPU_DEVICE", bad);
    try {
      (void)vgpu::RuntimeOptions::from_env();
      FAIL("no error for " << bad);
    } catch (const vgpu::Error& e) {
      CHECK(e.category() == vgpu::ErrorCategory::invalid_argument);
      CHECK(std::string(e.what()).find("Fix:") != std::string::npos);
    }
  }
  {
    ScopedEnv env("VGPU_BACKEND", " Vulkan , CPU ");
    auto o = vgpu::RuntimeOptions::from_env();
    CHECK(o.allowed == std::vector<vgpu::BackendKind>{vgpu::BackendKind::vulkan, vgpu::BackendKind::cpu});
  }
}

TEST_CASE("config: restricting to an unavailable backend says why in the selection error", "[config]") {
  vgpu::RuntimeOptions o;
  o.allowed = {vgpu::BackendKind::cuda};
  vgpu::Runtime rt(o);
  if (!rt.devices().empty()) {
    WARN("SKIPPED: CUDA is available here, so restricting to it leaves devices");
    return;
  }
  try {
    (void)rt.explain("matmul", {16, 16, 16});
    FAIL("no error");
  } catch (const vgpu::Error& e) {
    const std::string what = e.what();
    INFO(what);
    CHECK(e.category() == vgpu::ErrorCategory::unavailable);
    // Every backend is listed with its reason, not an empty list before the Fix hint.
    CHECK(what.find("\n  cuda: ") != std::string::npos);
    CHECK(what.find("\n  cpu: excluded by VGPU_BACKEND") != std::string::npos);
  }
}

TEST_CASE("config: an unknown VGPU_CPU_ISA keeps the CPU device, with a warning", "[config]") {
  // Warnings about a value are printed once per process: ask a fresh vgpu-probe.
  const std::string out =
      (std::filesystem::temp_directory_path() / ("vgpu-config-test-" + std::to_string(::getpid()))).string();
  const std::string cmd = "VGPU_CPU_ISA=avx9 VGPU_BACKEND=cpu " + vgpu::test::helper_path(VGPU_PROBE) + " --json >" +
                          out + ".json 2>" + out + ".err";
  REQUIRE(std::system(cmd.c_str()) == 0);
  std::ifstream json(out + ".json"), err(out + ".err");
  std::stringstream j, e;
  j << json.rdbuf();
  e << err.rdbuf();
  INFO(j.str() << "\n" << e.str());
  CHECK(j.str().find("\"name\": \"cpu\",\n      \"compiled_in\": true,\n      \"available\": true") !=
        std::string::npos);
  CHECK(e.str().find("VGPU_CPU_ISA='avx9'") != std::string::npos);
  CHECK(e.str().find("Fix:") != std::string::npos);
  std::filesystem::remove(out + ".json");
  std::filesystem::remove(out + ".err");
}

TEST_CASE("config: parsers", "[config]") {
  using namespace vgpu::config_parse;
  CHECK(boolean("ON") == true);
  CHECK(boolean(" 0 ") == false);
  CHECK_FALSE(integer(" 1", 0, 10).has_value());
  CHECK_FALSE(boolean("2").has_value());
  CHECK(integer("18446744073709551615", 0, UINT64_MAX) == UINT64_MAX);
  CHECK_FALSE(integer("18446744073709551616", 0, UINT64_MAX).has_value());
  CHECK_FALSE(integer("", 0, 10).has_value());
  CHECK_FALSE(integer("+1", 0, 10).has_value());
  CHECK(bytes("4k") == 4096u);
  CHECK_FALSE(bytes("4kb").has_value());
  CHECK_FALSE(bytes("17179869184T").has_value());
}
