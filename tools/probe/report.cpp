// tools/probe/report.cpp — table and JSON rendering of a probe report.
#include "report.hpp"

#include <algorithm>
#include <cstdio>
#include <iomanip>
#include <sstream>

#include "vgpu/types.hpp"
#include "vgpu/version.hpp"

namespace vgpu::probe {
namespace {

/// Returns "yes" or "no".
const char* yes_no(bool value) { return value ? "yes" : "no"; }

/// Formats three dimensions as "AxBxC".
std::string format_dims(const std::array<std::uint32_t, 3>& d) {
  return std::to_string(d[0]) + "x" + std::to_string(d[1]) + "x" + std::to_string(d[2]);
}

/// Joins strings with ", " ("none" when empty).
std::string join(const std::vector<std::string>& items) {
  if (items.empty()) return "none";
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

/// Formats seconds compactly with a unit suited to their size (µs, ms or s).
std::string format_seconds(double s) {
  char buf[32];
  if (s < 1e-3)
    std::snprintf(buf, sizeof buf, "%.1f us", s * 1e6);
  else if (s < 1.0)
    std::snprintf(buf, sizeof buf, "%.2f ms", s * 1e3);
  else
    std::snprintf(buf, sizeof buf, "%.3f s", s);
  return buf;
}

/// Prints one "  key   value" row of a device block.
void row(std::ostream& os, const char* key, const std::string& value) {
  os << "    " << std::left << std::setw(22) << key << value << "\n";
}

}  // namespace

std::string version_string() {
  return std::to_string(kVersionMajor) + "." + std::to_string(kVersionMinor) + "." + std::to_string(kVersionPatch);
}

std::string format_bytes(std::uint64_t bytes) {
  if (bytes == 0) return "unknown";
  static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024.0 && u < 4) {
    v /= 1024.0;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", v, units[u]);
  return buf;
}

bool all_passed(const ProbeReport& report) {
  return std::all_of(report.devices.begin(), report.devices.end(),
                     [](const DeviceReport& d) { return !d.self_test || d.self_test->passed; });
}

void print_inventory(std::ostream& os, const ProbeReport& report) {
  os << "vgpu " << version_string() << " (cache format " << kCacheFormatVersion << ")\n\n";

  os << "Backends\n";
  os << "  " << std::left << std::setw(8) << "name" << std::setw(13) << "compiled-in" << std::setw(11) << "available"
     << "reason\n";
  for (const auto& b : report.backends)
    os << "  " << std::left << std::setw(8) << to_string(b.kind) << std::setw(13) << yes_no(b.compiled_in)
       << std::setw(11) << yes_no(b.available) << (b.reason.empty() ? "-" : b.reason) << "\n";

  os << "\nDevices (" << report.devices.size() << ")\n";
  if (report.devices.empty()) os << "  none: every backend above is unavailable or excluded\n";
  for (const auto& d : report.devices) {
    const DeviceInfo& i = d.info;
    os << "  " << i.id() << "  " << i.name << "\n";
    row(os, "type", std::string(to_string(i.type)));
    row(os, "vendor", i.vendor.empty() ? "-" : i.vendor);
    row(os, "driver", i.driver_version.empty() ? "-" : i.driver_version);
    row(os, "api", i.api_version.empty() ? "-" : i.api_version);
    row(os, "memory", format_bytes(i.memory_bytes));
    row(os, "compute units", std::to_string(i.compute_units));
    row(os, "max workgroup size",
        format_dims(i.limits.max_workgroup_size) + " (" + std::to_string(i.limits.max_workgroup_invocations) +
            " invocations)");
    row(os, "max workgroup count", format_dims(i.limits.max_workgroup_count));
    row(os, "max shared memory", format_bytes(i.limits.max_shared_memory_bytes));
    row(os, "max buffer", format_bytes(i.limits.max_buffer_bytes));
    row(os, "features", join(i.features));
    row(os, "dialects", join(i.dialects));
    row(os, "fingerprint", i.fingerprint.hex());
  }
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

nlohmann::ordered_json to_json(const BackendStatus& s) {
  return {{"name", std::string(to_string(s.kind))},
          {"compiled_in", s.compiled_in},
          {"available", s.available},
          {"reason", s.reason}};
}

nlohmann::ordered_json to_json(const SelfTestResult& r) {
  nlohmann::ordered_json j = {
      {"passed", r.passed},   {"max_abs_error", r.max_abs_error}, {"tolerance", r.tolerance},
      {"seconds", r.seconds}, {"build_seconds", r.build_seconds}, {"run_seconds", r.run_seconds}};
  j["error"] = r.error.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(r.error);
  j["queue"] = {{"passed", r.queue_passed},
                {"items", kQueueSelfTestItems},
                {"launches", r.queue_launches},
                {"error", r.queue_error.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(r.queue_error)}};
  return j;
}

nlohmann::ordered_json to_json(const DeviceReport& d) {
  const DeviceInfo& i = d.info;
  const DeviceLimits& l = i.limits;
  nlohmann::ordered_json limits = {
      {"max_workgroup_size", l.max_workgroup_size},   {"max_workgroup_invocations", l.max_workgroup_invocations},
      {"max_workgroup_count", l.max_workgroup_count}, {"max_shared_memory_bytes", l.max_shared_memory_bytes},
      {"max_buffer_bytes", l.max_buffer_bytes},       {"max_bindings", l.max_bindings}};
  nlohmann::ordered_json j = {{"id", i.id()},
                              {"backend", std::string(to_string(i.backend))},
                              {"index", i.index},
                              {"name", i.name},
                              {"type", std::string(to_string(i.type))},
                              {"vendor", i.vendor},
                              {"driver_version", i.driver_version},
                              {"api_version", i.api_version},
                              {"memory_bytes", i.memory_bytes},
                              {"compute_units", i.compute_units},
                              {"limits", std::move(limits)},
                              {"features", i.features},
                              {"dialects", i.dialects},
                              {"fingerprint", {{"hex", i.fingerprint.hex()}, {"text", i.fingerprint.text}}}};
  j["self_test"] = d.self_test ? to_json(*d.self_test) : nlohmann::ordered_json(nullptr);
  return j;
}

nlohmann::ordered_json to_json(const ProbeReport& report) {
  nlohmann::ordered_json backends = nlohmann::ordered_json::array(), devices = nlohmann::ordered_json::array();
  for (const auto& b : report.backends) backends.push_back(to_json(b));
  for (const auto& d : report.devices) devices.push_back(to_json(d));
  return {{"version", version_string()},
          {"cache_format_version", kCacheFormatVersion},
          {"backends", std::move(backends)},
          {"devices", std::move(devices)}};
}

}  // namespace vgpu::probe
