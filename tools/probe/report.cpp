// SPDX-License-Identifier: Apache-2.0
// tools/probe/report.cpp — table and JSON rendering of a probe report; the inventory part
// (backends and devices) is the library's (vgpu/inventory.hpp), shared with `python3 -m vgpu`.
#include "report.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <iomanip>
#include <sstream>

#include "vgpu/inventory.hpp"
#include "vgpu/types.hpp"
#include "vgpu/version.hpp"

namespace vgpu::probe {

nlohmann::ordered_json json_document() { return {{"schema", kProbeSchemaVersion}}; }

std::string json_text(const nlohmann::ordered_json& j) {
  return j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

RuntimeOptions read_only_options() {
  RuntimeOptions options = RuntimeOptions::from_env();
  options.cache_enabled = false;
  return options;
}

std::vector<DeviceInfo> filter_devices(const std::vector<DeviceInfo>& all, const std::vector<std::string>& ids) {
  if (ids.empty()) return all;
  for (const std::string& id : ids) {
    const bool found = std::any_of(all.begin(), all.end(), [&](const DeviceInfo& d) { return d.id() == id; });
    if (found) continue;
    std::string known;
    for (const DeviceInfo& d : all) known += (known.empty() ? "" : ", ") + d.id();
    try {
      fail(ErrorCategory::invalid_argument, "--device '" + id + "' names no device found here.",
           known.empty() ? "this machine has no usable device (vgpu-probe says why each backend is unavailable)."
                         : "pass one of " + known + " (as vgpu-probe list prints them), or leave --device out.");
    } catch (const vgpu::Error& e) {
      throw ArgumentError(e);
    }
  }
  std::vector<DeviceInfo> out;
  for (const DeviceInfo& d : all)
    if (std::find(ids.begin(), ids.end(), d.id()) != ids.end()) out.push_back(d);
  return out;
}

void add_device_option(CLI::App& cmd, std::vector<std::string>& ids, const std::string& what) {
  cmd.add_option("--device", ids,
                 "Only this device (backend:index as `vgpu-probe list` prints it; repeat or " +
                     std::string("give a comma list for several): ") + what)
      ->delimiter(',')
      ->type_name("ID");
}

bool json_requested(const CLI::App& root) {
  for (const CLI::App* app = &root; app != nullptr;) {
    const CLI::Option* json = app->get_option_no_throw("--json");
    if (json != nullptr && json->count() > 0) return true;
    const std::vector<CLI::App*> chosen = app->get_subcommands();  // at most one per level here
    app = chosen.empty() ? nullptr : chosen.front();
  }
  return false;
}

std::string version_string() { return vgpu::version_string(); }

std::string format_bytes(std::uint64_t bytes) { return vgpu::format_bytes(bytes); }

bool all_passed(const ProbeReport& report) {
  return std::all_of(report.devices.begin(), report.devices.end(),
                     [](const DeviceReport& d) { return !d.self_test || d.self_test->passed; });
}

void print_inventory(std::ostream& os, const ProbeReport& report) {
  std::vector<DeviceInfo> devices;
  for (const auto& d : report.devices) devices.push_back(d.info);
  os << inventory_text(report.backends, devices);
}

void print_self_test_heading(std::ostream& os) {
  os << "\nSelf-test: " << self_test_description() << "\n  " << self_test_criterion() << "\n";
}

void print_self_test_line(std::ostream& os, const DeviceInfo& info, const SelfTestResult& r) {
  os << "  " << std::left << std::setw(10) << info.id() << (r.passed ? "PASS" : "FAIL");
  if (!r.error.empty()) {
    os << "  error after " << format_seconds(r.seconds) << ": " << r.error << "\n";
    return;
  }
  char err[64];
  std::snprintf(err, sizeof err, "max_abs_error %.3g (limit %.3g)", r.max_abs_error, r.tolerance);
  os << "  " << err << "  " << format_seconds(r.seconds) << " (build " << format_seconds(r.build_seconds) << ", run "
     << format_seconds(r.run_seconds) << ")";
  if (!r.queue_error.empty())
    os << "  queue: error: " << r.queue_error;
  else
    os << "  queue: " << kQueueSelfTestItems << " items, " << r.queue_launches << " launch"
       << (r.queue_launches == 1 ? "" : "es") << ", " << (r.queue_passed ? "right" : "WRONG");
  os << "\n";
}

nlohmann::ordered_json to_json(const BackendStatus& s) { return nlohmann::ordered_json::parse(inventory_json(s)); }

nlohmann::ordered_json to_json(const SelfTestResult& r) {
  nlohmann::ordered_json j = {
      {"passed", r.passed},   {"max_abs_error", r.max_abs_error}, {"tolerance", r.tolerance},
      {"seconds", r.seconds}, {"build_seconds", r.build_seconds}, {"run_seconds", r.run_seconds}};
  j["error"] = r.error.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(r.error);
  j["queue"] = {
      {"passed", r.queue_passed},
      {"items", kQueueSelfTestItems},
      {"launches", r.queue_launches},
      {"error", r.queue_error.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(r.queue_error)}};
  return j;
}

nlohmann::ordered_json to_json(const DeviceReport& d) {
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(inventory_json(d.info));  // vgpu/inventory.hpp's fields
  j["self_test"] = d.self_test ? to_json(*d.self_test) : nlohmann::ordered_json(nullptr);
  if (!d.feature_checks) {
    j["feature_checks"] = nullptr;
    return j;
  }
  nlohmann::ordered_json checks = nlohmann::ordered_json::array();
  for (const FeatureCheck& c : *d.feature_checks)
    checks.push_back(
        {{"feature", c.feature}, {"verdict", to_string(c.verdict)}, {"note", c.note}, {"stored", c.stored}});
  j["feature_checks"] = std::move(checks);
  return j;
}

void print_feature_heading(std::ostream& os) {
  os << "\nFeature checks: a probe kernel per advertised feature, its results compared bit for bit\n"
        "  (a feature that fails is not used: kernels declaring its SPIR-V capability are refused)\n";
}

void print_feature_lines(std::ostream& os, const DeviceInfo& info, const std::vector<FeatureCheck>& checks) {
  if (checks.empty()) {
    os << "  " << info.id() << ": none of the probed features advertised\n";
    return;
  }
  for (const FeatureCheck& c : checks)
    os << "  " << info.id() << "  " << c.feature << ": " << to_string(c.verdict) << (c.stored ? " (stored)" : "")
       << (c.note.empty() ? "" : " - " + c.note) << "\n";
}

nlohmann::ordered_json to_json(const ProbeReport& report) {
  nlohmann::ordered_json backends = nlohmann::ordered_json::array(), devices = nlohmann::ordered_json::array();
  for (const auto& b : report.backends) backends.push_back(to_json(b));
  for (const auto& d : report.devices) devices.push_back(to_json(d));
  nlohmann::ordered_json j = json_document();
  j["version"] = version_string();
  j["cache_format_version"] = kCacheFormatVersion;
  j["backends"] = std::move(backends);
  j["devices"] = std::move(devices);
  return j;
}

}  // namespace vgpu::probe
