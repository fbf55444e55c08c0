// SPDX-License-Identifier: Apache-2.0
// core/runtime/device/inventory.cpp — table and JSON rendering of the backends and devices found
// (vgpu/inventory.hpp), as vgpu-probe prints them.
#include "vgpu/inventory.hpp"

#include <cstdio>
#include <iomanip>
#include <nlohmann/json.hpp>
#include <sstream>
#include <type_traits>

#include "vgpu/types.hpp"
#include "vgpu/version.hpp"

namespace vgpu {
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

/// Prints one "  key   value" row of a device block.
void row(std::ostream& os, const char* key, const std::string& value) {
  os << "    " << std::left << std::setw(22) << key << value << "\n";
}

/// Returns value, or null when it is unknown (0 for counts and sizes, empty for ids).
template <class T>
nlohmann::ordered_json or_null(const T& value) {
  if constexpr (std::is_same_v<T, std::string>)
    return value.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(value);
  else if constexpr (std::is_arithmetic_v<T>)
    return value == 0 ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(value);
  else
    return value ? nlohmann::ordered_json(*value) : nlohmann::ordered_json(nullptr);
}

/// Returns the decimal number, or "unknown" for 0.
std::string count_text(std::uint64_t value) { return value == 0 ? "unknown" : std::to_string(value); }

/// Returns an id as 0x-hex (4 digits at least, as lspci and vulkaninfo print them), or "unknown".
std::string id_text(const std::optional<std::uint32_t>& id) {
  if (!id) return "unknown";
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%04x", *id);
  return buf;
}

nlohmann::ordered_json backend_object(const BackendStatus& s) {
  return {{"name", std::string(to_string(s.kind))},
          {"compiled_in", s.compiled_in},
          {"available", s.available},
          {"reason", s.reason}};
}

nlohmann::ordered_json device_object(const DeviceInfo& i) {
  const DeviceLimits& l = i.limits;
  nlohmann::ordered_json limits = {
      {"max_workgroup_size", l.max_workgroup_size},   {"max_workgroup_invocations", l.max_workgroup_invocations},
      {"max_workgroup_count", l.max_workgroup_count}, {"max_shared_memory_bytes", l.max_shared_memory_bytes},
      {"max_buffer_bytes", l.max_buffer_bytes},       {"max_bindings", l.max_bindings},
      {"max_loop_iterations", l.max_loop_iterations}};
  return {{"id", i.id()},
          {"backend", std::string(to_string(i.backend))},
          {"index", i.index},
          {"name", i.name},
          {"type", std::string(to_string(i.type))},
          {"vendor", i.vendor},
          {"driver_version", i.driver_version},
          {"api_version", i.api_version},
          {"memory_bytes", or_null(i.memory_bytes)},
          {"compute_units", or_null(i.compute_units)},
          {"vendor_id", or_null(i.vendor_id)},
          {"device_id", or_null(i.device_id)},
          {"device_uuid", or_null(i.device_uuid)},
          {"driver_uuid", or_null(i.driver_uuid)},
          {"subgroup_size", or_null(i.subgroup_size)},
          {"limits", std::move(limits)},
          {"features", i.features},
          {"dialects", i.dialects},
          {"fingerprint", {{"hex", i.fingerprint.hex()}, {"text", i.fingerprint.text}}}};
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

std::string inventory_text(const std::vector<BackendStatus>& backends, const std::vector<DeviceInfo>& devices) {
  std::ostringstream os;
  os << "vgpu " << version_string() << " (cache format " << kCacheFormatVersion << ")\n\n";

  os << "Backends\n";
  os << "  " << std::left << std::setw(8) << "name" << std::setw(13) << "compiled-in" << std::setw(11) << "available"
     << "reason\n";
  for (const auto& b : backends)
    os << "  " << std::left << std::setw(8) << to_string(b.kind) << std::setw(13) << yes_no(b.compiled_in)
       << std::setw(11) << yes_no(b.available) << (b.reason.empty() ? "-" : b.reason) << "\n";

  os << "\nDevices (" << devices.size() << ")\n";
  if (devices.empty()) os << "  none: every backend above is unavailable or excluded\n";
  for (const DeviceInfo& i : devices) {
    os << "  " << i.id() << "  " << i.name << "\n";
    row(os, "type", std::string(to_string(i.type)));
    row(os, "vendor", i.vendor.empty() ? "-" : i.vendor);
    row(os, "driver", i.driver_version.empty() ? "-" : i.driver_version);
    row(os, "api", i.api_version.empty() ? "-" : i.api_version);
    row(os, "memory", format_bytes(i.memory_bytes));
    row(os, "compute units", count_text(i.compute_units));
    row(os, "vendor id", id_text(i.vendor_id));
    row(os, "device id", id_text(i.device_id));
    row(os, "device uuid", i.device_uuid.empty() ? "unknown" : i.device_uuid);
    row(os, "driver uuid", i.driver_uuid.empty() ? "unknown" : i.driver_uuid);
    row(os, "subgroup size", i.subgroup_size ? std::to_string(*i.subgroup_size) : "unknown");
    row(os, "max workgroup size",
        format_dims(i.limits.max_workgroup_size) + " (" + std::to_string(i.limits.max_workgroup_invocations) +
            " invocations)");
    row(os, "max workgroup count", format_dims(i.limits.max_workgroup_count));
    // 0 is a value here, not unknown: the CPU device has no workgroup shared memory.
    row(os, "max shared memory",
        i.limits.max_shared_memory_bytes ? format_bytes(i.limits.max_shared_memory_bytes) : std::string("none"));
    row(os, "max buffer", format_bytes(i.limits.max_buffer_bytes));
    // 0 is "no limit": only drivers that cut loops short (llvmpipe, lavapipe) have one.
    row(os, "max loop iterations",
        i.limits.max_loop_iterations ? std::to_string(i.limits.max_loop_iterations) + " per invocation, all loops"
                                     : std::string("none"));
    row(os, "features", join(i.features));
    row(os, "dialects", join(i.dialects));
    row(os, "fingerprint", i.fingerprint.hex());
  }
  return os.str();
}

// Driver-reported names and reasons may hold any bytes: non-UTF-8 ones come out as U+FFFD
// rather than as nlohmann's type_error.
constexpr auto kReplace = nlohmann::ordered_json::error_handler_t::replace;

std::string inventory_json(const BackendStatus& backend) {
  return backend_object(backend).dump(-1, ' ', false, kReplace);
}

std::string inventory_json(const DeviceInfo& device) { return device_object(device).dump(-1, ' ', false, kReplace); }

std::string inventory_json(const std::vector<BackendStatus>& backends, const std::vector<DeviceInfo>& devices,
                           int indent) {
  nlohmann::ordered_json b = nlohmann::ordered_json::array(), d = nlohmann::ordered_json::array();
  for (const auto& s : backends) b.push_back(backend_object(s));
  for (const auto& i : devices) {
    nlohmann::ordered_json j = device_object(i);
    j["self_test"] = nullptr;
    j["feature_checks"] = nullptr;  // vgpu-probe --features fills it (vgpu/feature_check.hpp)
    d.push_back(std::move(j));
  }
  const nlohmann::ordered_json all = {{"schema", kProbeSchemaVersion},
                                      {"version", version_string()},
                                      {"cache_format_version", kCacheFormatVersion},
                                      {"backends", std::move(b)},
                                      {"devices", std::move(d)}};
  return all.dump(indent, ' ', false, kReplace);
}

}  // namespace vgpu
