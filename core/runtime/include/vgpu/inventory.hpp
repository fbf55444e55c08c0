// SPDX-License-Identifier: Apache-2.0
// vgpu/inventory.hpp — the backends and devices found, rendered as vgpu-probe prints them: a
// human table and JSON. vgpu-probe and the Python module (`python3 -m vgpu`) share these.
#pragma once

#include "vgpu/export.hpp"

#include <cstdint>
#include <string>
#include <vector>

#include "vgpu/backend_status.hpp"
#include "vgpu/device_info.hpp"

namespace vgpu {

/// The "schema" number that starts every JSON document vgpu-probe and `python3 -m vgpu` print
/// (docs/probe.md): added fields keep it; a renamed, removed or retyped field raises it.
inline constexpr int kProbeSchemaVersion = 1;

/// Returns "major.minor.patch" of the linked vgpu.
VGPU_API std::string version_string();
/// Formats a byte count as "1.5 GiB"-style text ("unknown" for 0).
VGPU_API std::string format_bytes(std::uint64_t bytes);
/// Formats seconds with a unit suited to their size: "12.3 us", "4.56 ms" or "1.234 s".
VGPU_API std::string format_seconds(double seconds);

/// Returns the version line, the backend table and one block per device, as vgpu-probe prints
/// them before its self-tests (every line ends in '\n').
VGPU_API std::string inventory_text(const std::vector<BackendStatus>& backends, const std::vector<DeviceInfo>& devices);
/// Returns one backend as a JSON object {"name","compiled_in","available","reason"} (compact).
VGPU_API std::string inventory_json(const BackendStatus& backend);
/// Returns one device as a JSON object {"id","backend","index","name","type",…,"fingerprint"}
/// (compact; vgpu-probe adds "self_test" and "feature_checks"); unknown values (DeviceInfo's 0 or empty) are null.
/// Bytes that are not UTF-8 (a driver's name in another encoding) come out as U+FFFD in every
/// inventory_json, which never throws for them.
VGPU_API std::string inventory_json(const DeviceInfo& device);
/// Returns {"schema":1,"version","cache_format_version","backends":[…],"devices":[…]} with each device's
/// "self_test" null (vgpu-probe --json --no-self-test), indented by indent spaces (< 0: compact).
VGPU_API std::string inventory_json(const std::vector<BackendStatus>& backends, const std::vector<DeviceInfo>& devices,
                                    int indent = 2);

}  // namespace vgpu
