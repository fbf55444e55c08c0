// SPDX-License-Identifier: Apache-2.0
// tools/probe/entry_device.cpp — an L2 entry's device from its fingerprint text (entry_device.hpp).
#include "entry_device.hpp"

#include <algorithm>
#include <map>
#include <string_view>

#include "report.hpp"
#include "vgpu/runtime.hpp"

namespace vgpu::probe {
namespace {

/// Splits "key=value;key=value;..." (make_fingerprint's form) into its facts; a value holding
/// ';' is cut there, which only shortens what is shown.
std::map<std::string, std::string, std::less<>> facts_of(std::string_view text) {
  std::map<std::string, std::string, std::less<>> facts;
  while (!text.empty()) {
    const std::size_t semi = text.find(';');
    const std::string_view fact = text.substr(0, semi);
    if (const std::size_t eq = fact.find('='); eq != std::string_view::npos)
      facts.emplace(std::string(fact.substr(0, eq)), std::string(fact.substr(eq + 1)));
    if (semi == std::string_view::npos) break;
    text.remove_prefix(semi + 1);
  }
  return facts;
}

/// Returns the value of the first of names that facts has, or "".
std::string first_of(const std::map<std::string, std::string, std::less<>>& facts,
                     std::initializer_list<std::string_view> names) {
  for (std::string_view n : names)
    if (auto it = facts.find(n); it != facts.end()) return it->second;
  return "";
}

/// Returns the "<id>=<fingerprint hex>" items of a selection record's key text: the values of
/// its device= field and the comma-separated items of its devices= field.
std::vector<std::string> measured_devices(std::string_view key_text) {
  std::vector<std::string> out;
  for (std::string_view field : {std::string_view("device="), std::string_view("devices=")}) {
    std::size_t at = 0;
    while ((at = key_text.find(field, at)) != std::string_view::npos) {
      const bool starts_field = at > 0 && key_text[at - 1] == ';';
      at += field.size();
      if (!starts_field) continue;
      std::string_view rest = key_text.substr(at, key_text.find(';', at) - at);
      while (!rest.empty()) {
        const std::size_t comma = rest.find(',');
        if (comma != 0) out.emplace_back(rest.substr(0, comma));
        if (comma == std::string_view::npos) break;
        rest.remove_prefix(comma + 1);
      }
    }
  }
  return out;
}

/// Returns the driver facts of a kernel entry's fingerprint in a few words ("api_version 1.3.230,
/// driver_version 4202496"), or nothing. Chosen by the facts' names, not by backend (backends
/// name their own facts; this stays right for a new one): every "...version" fact, the compute
/// capability and the instruction set.
std::optional<std::string> driver_of(const std::map<std::string, std::string, std::less<>>& facts) {
  std::string out;
  for (const auto& [key, value] : facts) {
    const bool driver_fact = key.ends_with("version") || key == "compute_capability" || key == "isa";
    if (driver_fact) out += (out.empty() ? "" : ", ") + key + " " + value;
  }
  if (out.empty()) return std::nullopt;
  return out;
}

}  // namespace

std::string EntryDevice::text() const {
  std::string detail = backend.value_or("");
  if (driver) detail += (detail.empty() ? "" : "; ") + *driver;
  return detail.empty() ? name : name + " (" + detail + ")";
}

EntryDevice entry_device(const cache::DiskEntryInfo& entry) {
  EntryDevice d;
  if (entry.fingerprint_text.empty()) return d;
  if (entry.kind == cache::EntryKind::selection) {
    // Its fingerprint text is the record's key text: name the devices it measured, by id.
    for (const std::string& item : measured_devices(entry.fingerprint_text))
      d.name += (d.name.empty() ? "" : ", ") + item.substr(0, item.find('='));
    if (d.name.empty()) {  // a pointer to a class's last selection: the backends it covers
      const auto facts = facts_of(entry.fingerprint_text);
      if (auto scope = facts.find("scope"); scope != facts.end()) d.name = "scope " + scope->second;
    }
    return d;
  }
  const auto facts = facts_of(entry.fingerprint_text);
  const std::string backend = first_of(facts, {"backend"});
  if (!backend.empty()) d.backend = backend;
  d.name = first_of(facts, {"name", "renderer", "model"});
  if (d.name.empty()) d.name = entry.fingerprint_text;  // no name fact: the facts themselves
  d.driver = driver_of(facts);
  return d;
}

bool belongs_to(const cache::DiskEntryInfo& entry, const DeviceInfo& device) {
  if (entry.fingerprint_text.empty()) return false;
  if (entry.kind != cache::EntryKind::selection) return entry.fingerprint_text == device.fingerprint.text;
  const std::string mine = device.id() + "=" + device.fingerprint.hex();
  const std::vector<std::string> items = measured_devices(entry.fingerprint_text);
  return std::find(items.begin(), items.end(), mine) != items.end();
}

bool belongs_to_any(const cache::DiskEntryInfo& entry, const std::vector<DeviceInfo>& devices) {
  return devices.empty() ||
         std::any_of(devices.begin(), devices.end(), [&](const DeviceInfo& d) { return belongs_to(entry, d); });
}

std::vector<DeviceInfo> devices_named(const std::vector<std::string>& ids) {
  if (ids.empty()) return {};
  Runtime runtime(read_only_options());
  return filter_devices(runtime.devices(), ids);
}

}  // namespace vgpu::probe
