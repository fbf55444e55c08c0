// SPDX-License-Identifier: Apache-2.0
// tools/probe/list_command.cpp — `vgpu-probe list`: the devices, one line each. Devices are
// enumerated by a runtime of its own with the on-disk cache off, so listing changes nothing.
#include "list_command.hpp"

#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "report.hpp"
#include "vgpu/runtime.hpp"
#include "vgpu/types.hpp"

namespace vgpu::probe {
namespace {

struct ListOptions {
  bool json = false;
  std::vector<std::string> devices;
};

/// "API 1.3.230, driver Mesa 22.3.6" style text of what the device runs on ("" parts left out).
std::string api_and_driver(const DeviceInfo& d) {
  std::string out = d.api_version;
  if (!d.driver_version.empty()) out += (out.empty() ? "driver " : ", driver ") + d.driver_version;
  return out;
}

int run_list(const ListOptions& o) {
  Runtime runtime(read_only_options());
  const std::vector<DeviceInfo> devices = filter_devices(runtime.devices(), o.devices);
  if (o.json) {
    nlohmann::ordered_json j = json_document();
    j["devices"] = nlohmann::ordered_json::array();
    for (const DeviceInfo& d : devices)
      j["devices"].push_back(
          {{"id", d.id()},
           {"name", d.name},
           {"type", std::string(to_string(d.type))},
           {"backend", std::string(to_string(d.backend))},
           {"api_version", d.api_version},
           {"driver_version", d.driver_version},
           {"device_uuid", d.device_uuid.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(d.device_uuid)}});
    std::cout << json_text(j) << "\n";
    return 0;
  }
  for (const DeviceInfo& d : devices) {
    std::cout << d.id() << ": " << d.name << " (" << to_string(d.type);
    if (const std::string api = api_and_driver(d); !api.empty()) std::cout << "; " << api;
    if (!d.device_uuid.empty()) std::cout << "; UUID " << d.device_uuid;
    std::cout << ")\n";
  }
  if (devices.empty())
    std::cerr << "vgpu-probe: no device found (run vgpu-probe to see why each backend is unavailable)\n";
  return 0;
}

}  // namespace

void add_list_command(CLI::App& app, std::function<int()>& action) {
  auto o = std::make_shared<ListOptions>();
  CLI::App* cmd = app.add_subcommand("list", "List the devices, one line each: id, name, type, API and driver");
  add_device_option(*cmd, o->devices, "list only these");
  cmd->add_flag("--json", o->json, "Print one JSON object");
  cmd->callback([&action, &app, o] {
    action = [&app, o] {
      o->json = o->json || json_requested(app);
      return run_list(*o);
    };
  });
}

}  // namespace vgpu::probe
