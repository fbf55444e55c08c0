// SPDX-License-Identifier: Apache-2.0
// tests/conformance/main.cpp — the conformance runner. ctest runs it once per backend kind with
// VGPU_TEST_BACKENDS=<kind>; a backend that is not available here is reported as a skip with
// its reason (exit code 77, ctest's SKIP_RETURN_CODE), never as a silent pass. Driver validators
// pick devices with --device ID (docs/conformance.md); --list and --junit FILE are ours too. These
// are taken out of argv before Catch sees it (Catch2 2 and 3 differ in their CLI API); every
// other argument is Catch's. Exit codes: 0, 1, 2 and 77 only (run_tally.hpp).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "conformance/conformance.hpp"
#include "conformance/junit_report.hpp"
#include "conformance/run_tally.hpp"
#include "support/backend_under_test.hpp"
#include "support/catch_session.hpp"

namespace vgpu_test {
namespace {

std::mutex g_mutex;
std::set<std::string> g_exercised;
std::vector<std::string> g_device_ids;  // --device: these devices only (empty: VGPU_TEST_BACKENDS decides)

/// What main() takes out of argv for itself; the rest goes to Catch.
struct RunnerOptions {
  std::vector<std::string> devices;
  bool list = false;
  std::string junit;
  std::string junit_part;               // internal: this process is one device's part of --junit
  std::vector<std::string> catch_args;  // argv[0] first
  std::string error;                    // a usage error, when not empty
};

/// Splits "a,b" into its non-empty items.
void add_ids(std::vector<std::string>& out, const std::string& list) {
  std::stringstream ss(list);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(item);
}

/// Takes --device ID (repeatable, or a comma list; also --device=ID), --list and --junit FILE
/// (also --junit=FILE) out of argv.
RunnerOptions parse_runner_options(int argc, char* argv[]) {
  RunnerOptions o;
  o.catch_args.push_back(argc > 0 ? argv[0] : "vgpu-conformance");
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const auto value = [&](const char* name) -> std::optional<std::string> {
      const std::string eq = std::string(name) + "=";
      if (arg.rfind(eq, 0) == 0) return arg.substr(eq.size());
      if (arg != name) return std::nullopt;
      if (i + 1 >= argc) {
        o.error = std::string(name) + " needs a value";
        return std::string();
      }
      return std::string(argv[++i]);
    };
    if (auto v = value("--device")) {
      add_ids(o.devices, *v);
    } else if (auto f = value("--junit")) {
      o.junit = *f;
      if (f->empty() && o.error.empty()) o.error = "--junit needs a file name";
    } else if (auto part = value("--junit-part")) {
      o.junit_part = *part;
    } else if (arg == "--list") {
      o.list = true;
    } else {
      o.catch_args.push_back(arg);
    }
  }
  return o;
}

/// Prints every device of this machine as vgpu-probe names it, and the unavailable backends.
void print_devices(const std::vector<vgpu::BackendStatus>& statuses) {
  std::printf("devices (use --device ID):\n");
  for (const vgpu::DeviceInfo& info : vgpu::Runtime::global().devices())
    std::printf("  %-10s %s (%s)\n", info.id().c_str(), info.name.c_str(),
                std::string(vgpu::to_string(info.type)).c_str());
  for (const vgpu::BackendStatus& s : statuses)
    if (!s.available)
      std::printf("  (%s unavailable: %s)\n", std::string(vgpu::to_string(s.kind)).c_str(), s.reason.c_str());
}

/// Returns the ids of this machine's devices, comma separated.
std::string available_ids() {
  std::string ids;
  for (const vgpu::DeviceInfo& info : vgpu::Runtime::global().devices()) ids += (ids.empty() ? "" : ", ") + info.id();
  return ids.empty() ? "none" : ids;
}

}  // namespace

std::vector<vgpu::Device> devices_under_test() {
  static const std::vector<vgpu::Device> devices = [] {
    if (g_device_ids.empty()) return open_requested_devices();
    std::vector<vgpu::Device> out;
    for (const std::string& id : g_device_ids) out.push_back(vgpu::Runtime::global().open(id));
    return out;
  }();
  return devices;
}

void note_exercised(const vgpu::Device& device) {
  std::lock_guard lock(g_mutex);
  g_exercised.insert(device.info().id());
}

std::vector<std::string> exercised_devices() {
  std::lock_guard lock(g_mutex);
  return {g_exercised.begin(), g_exercised.end()};
}

}  // namespace vgpu_test

int main(int argc, char* argv[]) {
  vgpu_test::RunnerOptions options = vgpu_test::parse_runner_options(argc, argv);
  if (!options.error.empty()) {
    std::fprintf(stderr, "conformance: %s. Fix: see `vgpu-conformance --help` and docs/conformance.md\n",
                 options.error.c_str());
    return 2;
  }
  std::vector<vgpu::BackendKind> kinds;
  std::vector<vgpu::BackendStatus> statuses;
  try {
    kinds = vgpu_test::requested_backend_kinds();
  } catch (const vgpu::Error& e) {
    std::fprintf(stderr, "conformance: bad VGPU_TEST_BACKENDS: %s\n", e.what());
    return 2;
  }
  try {
    statuses = vgpu::Runtime::global().backends();
  } catch (const vgpu::Error& e) {
    std::fprintf(stderr, "conformance: cannot start: %s\n", e.what());
    return 2;
  }
  for (const std::string& id : options.devices) {
    bool known = false;
    for (const vgpu::DeviceInfo& info : vgpu::Runtime::global().devices()) known = known || info.id() == id;
    if (!known) {
      std::fprintf(stderr,
                   "conformance: unknown device \"%s\"; this machine has: %s. Fix: pass one of those ids to "
                   "--device (vgpu-conformance --list or vgpu-probe shows them)\n",
                   id.c_str(), vgpu_test::available_ids().c_str());
      return 2;
    }
  }
  bool help = false;
  for (const std::string& a : options.catch_args)
    if (a == "-h" || a == "--help" || a == "-?") {
      help = true;
      std::printf(
          "vgpu-conformance options (before Catch's own, which all work too):\n"
          "  --device ID    test only this device (cpu:0, vulkan:0, ... as --list shows); repeatable or a comma list\n"
          "  --list         list this machine's devices and the test cases, then exit 0\n"
          "  --junit FILE   write a JUnit XML report to FILE: one test case per (case, device), each device's run\n"
          "                 in a process of its own, cases with nothing to run on a device marked skipped\n"
          "Exit codes: 0 every case that ran passed, 1 a case failed, 2 bad arguments, an unknown device or no "
          "test case ran (a filter that matched none), 77 backend unavailable (VGPU_TEST_BACKENDS)\n\n");
    }
  std::vector<char*> catch_argv;
  for (std::string& a : options.catch_args) catch_argv.push_back(a.data());
  std::string out = options.junit_part.empty() ? options.junit : options.junit_part;
  if (!options.junit_part.empty()) {
    static const char* extra[] = {"--reporter", "junit", "--out"};
    for (const char* e : extra) catch_argv.push_back(const_cast<char*>(e));
    catch_argv.push_back(out.data());
  }
  if (help) return vgpu_test::run_catch_session(static_cast<int>(catch_argv.size()), catch_argv.data());
  if (options.list) {
    vgpu_test::print_devices(statuses);
    std::printf("test cases:\n");
    std::fflush(stdout);
    std::vector<char*> list_argv{catch_argv[0], const_cast<char*>("--list-tests")};
    // Catch2 2 returns the number of tests listed, Catch2 3 zero: listing succeeded either way.
    vgpu_test::run_catch_session(static_cast<int>(list_argv.size()), list_argv.data());
    return 0;
  }
  vgpu_test::g_device_ids = options.devices;
  if (!options.devices.empty()) kinds.clear();  // --device picks the devices: VGPU_TEST_BACKENDS is not asked
  if (!kinds.empty()) {
    int runnable = 0;
    for (vgpu::BackendKind kind : kinds) {
      const std::string name(vgpu::to_string(kind));
      auto st = std::find_if(statuses.begin(), statuses.end(), [&](const auto& s) { return s.kind == kind; });
      if (st == statuses.end()) {
        std::printf("SKIPPED conformance.%s: the registry does not know this backend\n", name.c_str());
      } else if (!st->available) {
        std::printf("SKIPPED conformance.%s: %s\n", name.c_str(), st->reason.c_str());
      } else {
        ++runnable;
      }
    }
    if (runnable == 0) return 77;
  }
  for (const vgpu::Device& d : vgpu_test::devices_under_test())
    std::printf("conformance: testing %s (%s, %s)\n", d.info().id().c_str(), d.info().name.c_str(),
                std::string(vgpu::to_string(d.info().type)).c_str());
  std::fflush(stdout);
  if (!options.junit.empty() && options.junit_part.empty()) {
    std::vector<std::string> ids;
    for (const vgpu::Device& d : vgpu_test::devices_under_test()) ids.push_back(d.info().id());
    return vgpu_test::run_per_device_junit(options.catch_args[0], ids, options.catch_args, options.junit);
  }
  const int result = vgpu_test::run_catch_session(static_cast<int>(catch_argv.size()), catch_argv.data());
  if (!options.junit_part.empty()) vgpu_test::write_skips(options.junit_part);
  std::string ids;
  for (const auto& id : vgpu_test::exercised_devices()) ids += " " + id;
  std::printf("conformance: exercised devices:%s\n", ids.empty() ? " none" : ids.c_str());
  std::fflush(stdout);
  // Catch's own result counts failed assertions (2 or 77 would read as bad arguments or a skip)
  // and is 0 when a filter matched nothing; the tally gives 0, 1 or 2.
  return vgpu_test::conformance_exit_code(result, options.catch_args, vgpu_test::run_tally());
}
