// SPDX-License-Identifier: Apache-2.0
// tools/probe/report.hpp — what vgpu-probe found, rendered as a human table or as JSON.
// Rendering is kept apart from collection so every subcommand prints the same way.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "self_test.hpp"
#include "vgpu/feature_check.hpp"
#include "vgpu/backend_status.hpp"
#include "vgpu/device_info.hpp"
#include "vgpu/error.hpp"
#include "vgpu/runtime.hpp"

namespace CLI {
class App;
}

namespace vgpu::probe {

/// Returns an empty JSON object whose first key is "schema" (docs/probe.md): every document the
/// probe prints starts from it, so scripts can check the version before reading on.
nlohmann::ordered_json json_document();
/// Returns j as indented JSON text; bytes that are not UTF-8 (a path or a driver's device name
/// can hold any) come out as U+FFFD instead of making nlohmann throw.
std::string json_text(const nlohmann::ordered_json& j);

/// A vgpu::Error that is the caller's bad argument value, whatever its category (a FILE that is
/// no usable bundle is not_supported when it is of a newer version): main() exits 2 for it, as
/// for invalid_argument, and keeps its category in the error document.
class ArgumentError : public vgpu::Error {
 public:
  /// Wraps error as a bad argument value.
  explicit ArgumentError(const vgpu::Error& error) : vgpu::Error(error) {}
};

/// Returns the environment's runtime options with the on-disk kernel cache off: a runtime made
/// from them reads and writes nothing there (list, and the plain run's self-test).
RuntimeOptions read_only_options();

/// Returns the devices of all whose id is one of ids, in all's order (all of them when ids is
/// empty); throws ArgumentError (exit 2) naming an id that matches no device, with the ids there are.
std::vector<DeviceInfo> filter_devices(const std::vector<DeviceInfo>& all, const std::vector<std::string>& ids);

/// Adds the --device option (repeatable, or a comma list) that filter_devices reads to cmd.
void add_device_option(CLI::App& cmd, std::vector<std::string>& ids, const std::string& what);

/// Returns true when --json was given to root or to any subcommand chosen under it, so the flag
/// works in any position (`vgpu-probe --json cache stats` and `vgpu-probe cache stats --json`).
bool json_requested(const CLI::App& root);

/// One device as probed: its description and, unless skipped, its self-test outcome.
struct DeviceReport {
  DeviceInfo info;
  std::optional<SelfTestResult> self_test;                  ///< empty when --no-self-test
  std::optional<std::vector<FeatureCheck>> feature_checks;  ///< empty without --features
};

/// Everything one probe run found. A plain value.
struct ProbeReport {
  std::vector<BackendStatus> backends;
  std::vector<DeviceReport> devices;
};

/// Returns "major.minor.patch" of the linked vgpu headers.
std::string version_string();
/// Formats a byte count as "1.5 GiB"-style text ("unknown" for 0).
std::string format_bytes(std::uint64_t bytes);
/// Returns true when no device's self-test failed (skipped tests count as passed).
bool all_passed(const ProbeReport& report);

/// Prints the version line, the backend table and one block per device.
void print_inventory(std::ostream& os, const ProbeReport& report);
/// Prints the heading of the self-test section, stating the pass criterion.
void print_self_test_heading(std::ostream& os);
/// Prints one device's self-test line: id, PASS/FAIL, max error against its bound, time.
void print_self_test_line(std::ostream& os, const DeviceInfo& info, const SelfTestResult& result);

/// Prints the heading of the feature-check section (--features).
void print_feature_heading(std::ostream& os);
/// Prints one device's feature checks: a line per probed feature it advertises, or "none".
void print_feature_lines(std::ostream& os, const DeviceInfo& info, const std::vector<FeatureCheck>& checks);

/// Returns one backend's status as {"name","compiled_in","available","reason"}.
nlohmann::ordered_json to_json(const BackendStatus& status);
/// Returns a self-test outcome as {"passed","max_abs_error","tolerance","seconds",...}.
nlohmann::ordered_json to_json(const SelfTestResult& result);
/// Returns one device as JSON; "self_test" is null when it was skipped, "feature_checks" null
/// without --features.
nlohmann::ordered_json to_json(const DeviceReport& device);
/// Returns the whole report: {"schema","version","cache_format_version","backends":[…],"devices":[…]}; keys keep
/// this insertion order (ordered_json) so the output reads top-down.
nlohmann::ordered_json to_json(const ProbeReport& report);

}  // namespace vgpu::probe
