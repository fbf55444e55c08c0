// SPDX-License-Identifier: Apache-2.0
// tools/probe/cache_list_command.cpp — `vgpu-probe cache list` (cache_list_command.hpp).
#include "cache_list_command.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdint>
#include <iomanip>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "entry_device.hpp"
#include "report.hpp"
#include "vgpu/cache/disk_store.hpp"
#include "vgpu/cache/kernel_key.hpp"
#include "vgpu/version.hpp"

namespace vgpu::probe {
namespace {

using cache::DiskEntryInfo;

/// What `cache list` was given on the command line.
struct ListOptions {
  bool json = false;
  std::vector<std::string> devices;
};

/// Returns the seconds since the entry was written or last loaded (a hit refreshes the
/// modification time, the store's LRU age), never negative (a clock set back, a future mtime).
std::int64_t age_seconds(const DiskEntryInfo& e, std::int64_t now_ns) {
  return std::max<std::int64_t>(0, (now_ns - e.mtime_ns) / 1000000000);
}

/// Returns the 16 hex digits of the fingerprint text's hash (as `vgpu-probe --json` prints a
/// device's fingerprint.hex).
std::string fingerprint_hex(const std::string& text) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(cache::hash64(text)));
  return buf;
}

/// Returns a string, or null for "".
nlohmann::ordered_json text_or_null(const std::string& s) {
  return s.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(s);
}

/// Returns one entry as `cache list --json` prints it.
nlohmann::ordered_json entry_json(const DiskEntryInfo& e, std::int64_t now_ns) {
  const EntryDevice d = entry_device(e);
  nlohmann::ordered_json j;
  j["kind"] = std::string(cache::to_string(e.kind));
  j["key"] = e.key_hex;
  j["label"] = e.valid ? nlohmann::ordered_json(e.label) : nlohmann::ordered_json();
  j["device"] = text_or_null(d.name);
  j["backend"] = d.backend ? nlohmann::ordered_json(*d.backend) : nlohmann::ordered_json();
  j["driver"] = d.driver ? nlohmann::ordered_json(*d.driver) : nlohmann::ordered_json();
  j["fingerprint"] = e.fingerprint_text.empty() ? nlohmann::ordered_json()
                                                : nlohmann::ordered_json(fingerprint_hex(e.fingerprint_text));
  j["bytes"] = e.file_bytes;
  j["payload_bytes"] = e.payload_bytes;
  j["age_seconds"] = age_seconds(e, now_ns);
  j["path"] = e.path.string();
  j["valid"] = e.valid;
  j["problem"] = text_or_null(e.problem);
  return j;
}

int run_list(const ListOptions& o) {
  const std::vector<DeviceInfo> only = devices_named(o.devices);  // an unknown id: exit 2 before reading
  const cache::DiskStore& store = cache::DiskStore::global();
  std::vector<DiskEntryInfo> entries;
  std::vector<DiskEntryInfo> folders;
  for (DiskEntryInfo& e : store.list(false)) {
    if (e.folder)
      folders.push_back(std::move(e));
    else if (belongs_to_any(e, only))
      entries.push_back(std::move(e));
  }
  // Newest first, as `ls -t`: what a run just built is on top. Ties (one second's writes) by
  // kind, then key, so the order is the same on every run.
  std::sort(entries.begin(), entries.end(), [](const DiskEntryInfo& a, const DiskEntryInfo& b) {
    if (a.mtime_ns != b.mtime_ns) return a.mtime_ns > b.mtime_ns;
    if (a.kind != b.kind) return a.kind < b.kind;
    return a.key_hex < b.key_hex;
  });
  const std::int64_t now_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  for (const DiskEntryInfo& f : folders)  // the listing is silent about them otherwise
    std::cerr << "vgpu-probe: " << f.path.string() << ": " << f.problem
              << "; its entries are not listed. Fix: " << f.fix << ".\n";
  if (o.json) {
    nlohmann::ordered_json j = json_document();
    j["directory"] = store.directory().string();
    j["format_version"] = kCacheFormatVersion;
    j["device_filter"] = o.devices;
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const DiskEntryInfo& e : entries) list.push_back(entry_json(e, now_ns));
    j["entries"] = std::move(list);
    std::cout << json_text(j) << "\n";
    return 0;
  }
  std::size_t label_width = 4;
  for (const DiskEntryInfo& e : entries) label_width = std::max(label_width, std::min<std::size_t>(e.label.size(), 40));
  if (!entries.empty())
    std::cout << std::left << std::setw(8) << "KIND" << std::setw(34) << "KEY" << std::right << std::setw(10) << "SIZE"
              << std::setw(6) << "AGE"
              << "  " << std::left << std::setw(static_cast<int>(label_width)) << "NAME"
              << "  DEVICE\n";
  for (const DiskEntryInfo& e : entries) {
    const std::string label = !e.valid ? "-" : e.label.empty() ? "(none)" : e.label;
    const std::string device =
        e.valid ? entry_device(e).text() : "invalid: " + e.problem + " (run `vgpu-probe cache verify`)";
    std::cout << std::left << std::setw(8) << cache::to_string(e.kind) << std::setw(34) << e.key_hex << std::right
              << std::setw(10) << (e.file_bytes == 0 ? std::string("0 B") : format_bytes(e.file_bytes)) << std::setw(6)
              << age_text(age_seconds(e, now_ns)) << "  " << std::left << std::setw(static_cast<int>(label_width))
              << label << "  " << device << "\n";
  }
  if (entries.empty())
    std::cerr << "vgpu-probe: no entries in "
              << (store.directory() / ("v" + std::to_string(kCacheFormatVersion))).string()
              << (o.devices.empty() ? "" : " for the devices given") << "\n";
  return 0;
}

}  // namespace

std::string age_text(std::int64_t seconds) {
  if (seconds < 60) return std::to_string(seconds) + "s";
  if (seconds < 3600) return std::to_string(seconds / 60) + "m";
  if (seconds < 86400) return std::to_string(seconds / 3600) + "h";
  return std::to_string(seconds / 86400) + "d";
}

void add_cache_list_command(CLI::App& app, CLI::App& cache, std::function<int()>& action) {
  auto o = std::make_shared<ListOptions>();
  CLI::App* cmd = cache.add_subcommand(
      "list",
      "List the entries, one line each, newest first: kind, key, size, age, the kernel's name (or what else "
      "the entry is) and the device it was built for");
  add_device_option(*cmd, o->devices, "list only the entries built for or measured on these devices");
  cmd->add_flag("--json", o->json, "Print one JSON object");
  cmd->callback([&action, &app, o] {
    action = [&app, o] {
      o->json = o->json || json_requested(app);
      return run_list(*o);
    };
  });
}

}  // namespace vgpu::probe
