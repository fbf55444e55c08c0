// SPDX-License-Identifier: Apache-2.0
// tools/probe/cache_command.cpp — `vgpu-probe cache stats|clear|verify|export|import` (and the
// registration of `cache list`, cache_list_command.cpp).
#include "cache_command.hpp"

#include <cstdint>
#include <iomanip>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cache_list_command.hpp"
#include "entry_device.hpp"
#include "report.hpp"
#include "vgpu/cache/disk_store.hpp"
#include "vgpu/cache_bundle.hpp"
#include "vgpu/version.hpp"
#include "vgpu/platform/process.hpp"

namespace vgpu::probe {
namespace {

using cache::DiskEntryInfo;
using cache::DiskStore;
using cache::DiskStoreOptions;
using cache::EntryKind;
using vgpu::CacheBundleReport;

constexpr EntryKind kKinds[] = {EntryKind::spirv, EntryKind::vk_pipeline_cache, EntryKind::gl_program_binary,
                                EntryKind::cuda_binary, EntryKind::selection};

/// What the cache subcommands were given on the command line.
struct CacheOptions {
  bool json = false;
  bool fix = false;
  bool selections = false;           // clear: only the device selections (choices, pointers, models)
  std::vector<std::string> devices;  // --device: only the entries of these devices (empty: all)
};

/// Returns the JSON array of the --device ids given (empty: every entry was considered).
nlohmann::ordered_json device_filter_json(const CacheOptions& o) { return o.devices; }

/// Formats a byte count ("0 B" for zero).
std::string bytes_text(std::uint64_t bytes) { return bytes == 0 ? "0 B" : format_bytes(bytes); }

/// Returns the directory that holds entries of the current format.
std::string format_directory(const DiskStore& store) {
  return (store.directory() / ("v" + std::to_string(kCacheFormatVersion))).string();
}

/// Returns why the store is off, or "" when it is on.
std::string disabled_reason(const DiskStore& store, const DiskStoreOptions& options) {
  if (store.enabled()) return "";
  if (!options.enabled) return "disabled by VGPU_CACHE_DISABLE";
  return "the directory is not usable; see the warning above";
}

/// Prints one "  key   value" row.
void row(std::ostream& os, const char* key, const std::string& value) {
  os << "  " << std::left << std::setw(12) << key << value << "\n";
}

/// Returns what a maintenance command left in place as a JSON array, one object each.
nlohmann::ordered_json leftovers_json(const std::vector<cache::DiskLeftover>& left) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const auto& l : left)
    list.push_back({{"path", l.item.path.string()},
                    {"kind", to_string(l.item.kind)},
                    {"problem", l.item.problem},
                    {"why", l.why},
                    {"failed", l.failed}});
  return list;
}

/// Prints what a maintenance command left in place, one line each, and a closing summary.
void print_leftovers(std::ostream& os, const std::vector<cache::DiskLeftover>& left) {
  for (const auto& l : left)
    os << "  LEFT " << l.item.path.string() << (l.item.problem.empty() ? "" : ": " + l.item.problem) << "\n"
       << "       " << l.why << "\n";
  if (!left.empty())
    os << left.size() << (left.size() == 1 ? " item is" : " items are")
       << " still there (see above); the command exits with 1 until none is\n";
}

int run_stats(const CacheOptions& o) {
  const std::vector<DeviceInfo> only = devices_named(o.devices);  // an unknown id: exit 2 before reading
  DiskStore& store = DiskStore::global();
  const DiskStoreOptions options = DiskStoreOptions::from_env();
  const std::vector<DiskEntryInfo> entries = store.list(false);
  struct Totals {
    std::uint64_t entries = 0, bytes = 0;
  };
  std::map<EntryKind, Totals> per_kind;
  std::uint64_t count = 0, total = 0, payload = 0, invalid = 0;
  std::vector<const DiskEntryInfo*> folders;
  for (const auto& e : entries) {
    if (e.folder) {
      folders.push_back(&e);
      continue;
    }
    if (!belongs_to_any(e, only)) continue;
    ++count;
    per_kind[e.kind].entries += 1;
    per_kind[e.kind].bytes += e.file_bytes;
    total += e.file_bytes;
    payload += e.payload_bytes;
    if (!e.valid) ++invalid;
  }
  const std::string reason = disabled_reason(store, options);
  if (o.json) {
    nlohmann::ordered_json j = json_document();
    j["directory"] = store.directory().string();
    j["format_version"] = kCacheFormatVersion;
    j["format_directory"] = format_directory(store);
    j["enabled"] = store.enabled();
    j["disabled_reason"] = reason.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(reason);
    j["max_bytes"] = options.max_bytes;
    j["device_filter"] = device_filter_json(o);
    j["entries"] = count;
    j["invalid_entries"] = invalid;
    j["total_bytes"] = total;
    j["payload_bytes"] = payload;
    nlohmann::ordered_json kinds = nlohmann::ordered_json::object();
    for (EntryKind k : kKinds)
      kinds[std::string(to_string(k))] = {{"entries", per_kind[k].entries}, {"bytes", per_kind[k].bytes}};
    j["kinds"] = kinds;
    nlohmann::ordered_json unusable = nlohmann::ordered_json::array();
    for (const auto* f : folders)
      unusable.push_back({{"path", f->path.string()}, {"problem", f->problem}, {"fix", f->fix}});
    j["unusable_folders"] = unusable;
    std::cout << json_text(j) << "\n";
    return 0;
  }
  std::cout << "vgpu kernel cache (L2, format v" << kCacheFormatVersion << ")\n";
  row(std::cout, "directory", store.directory().string());
  row(std::cout, "enabled", reason.empty() ? "yes" : "no (" + reason + ")");
  row(std::cout, "size cap", bytes_text(options.max_bytes));
  if (!only.empty()) {
    std::string ids;
    for (const DeviceInfo& d : only) ids += (ids.empty() ? "" : ", ") + d.id();
    row(std::cout, "devices", ids + " (only their entries are counted)");
  }
  row(std::cout, "entries",
      std::to_string(count) +
          (invalid ? " (" + std::to_string(invalid) + " invalid: run `vgpu-probe cache verify`)" : std::string()));
  row(std::cout, "total", bytes_text(total) + " (payload " + bytes_text(payload) + ")");
  for (const auto* f : folders)
    row(std::cout, "unusable", f->path.string() + ": " + f->problem + ". Fix: " + f->fix + ".");
  std::cout << "\n  " << std::left << std::setw(8) << "kind" << std::right << std::setw(9) << "entries" << std::setw(14)
            << "bytes"
            << "\n";
  for (EntryKind k : kKinds)
    std::cout << "  " << std::left << std::setw(8) << to_string(k) << std::right << std::setw(9) << per_kind[k].entries
              << std::setw(14) << bytes_text(per_kind[k].bytes) << "\n";
  return 0;
}

int run_clear(const CacheOptions& o) {
  const std::vector<DeviceInfo> only = devices_named(o.devices);  // an unknown id: exit 2 before deleting
  DiskStore& store = DiskStore::global();
  std::vector<cache::DiskLeftover> left;
  std::uint64_t removed = 0;
  if (!only.empty())  // each entry's header tells its device: read, unlike a plain clear
    removed = store.remove_matching(
        false,
        [&](const DiskEntryInfo& e) {
          return (!o.selections || e.kind == EntryKind::selection) && belongs_to_any(e, only);
        },
        &left);
  else
    removed = o.selections ? store.clear_kind(EntryKind::selection, &left) : store.clear(&left);
  if (o.json) {
    nlohmann::ordered_json j = json_document();
    j["directory"] = store.directory().string();
    j["only"] = o.selections ? "selections" : "all";
    j["device_filter"] = device_filter_json(o);
    j["removed"] = removed;
    j["left"] = leftovers_json(left);
    std::cout << json_text(j) << "\n";
  } else {
    std::cout << "removed " << removed << (o.selections ? " selection" : "") << " entr" << (removed == 1 ? "y" : "ies")
              << " from " << format_directory(store) << (only.empty() ? "" : " (of the devices given)") << "\n";
    print_leftovers(std::cout, left);
  }
  return left.empty() ? 0 : 1;
}

int run_verify(const CacheOptions& o) {
  const std::vector<DeviceInfo> only = devices_named(o.devices);  // an unknown id: exit 2 before reading
  DiskStore& store = DiskStore::global();
  std::vector<DiskEntryInfo> entries = store.list(true);
  // With --device, only entries whose header names one of the devices (folders and things that
  // are no entries name none).
  if (!only.empty())
    std::erase_if(entries, [&](const DiskEntryInfo& e) { return e.folder || !belongs_to_any(e, only); });
  std::vector<const DiskEntryInfo*> bad;
  for (const auto& e : entries)
    if (!e.valid) bad.push_back(&e);
  std::vector<cache::DiskLeftover> left;
  std::uint64_t removed = 0;
  if (o.fix && !bad.empty())
    removed = only.empty()
                  ? store.remove_invalid(&left)
                  : store.remove_matching(
                        true, [&](const DiskEntryInfo& e) { return !e.valid && belongs_to_any(e, only); }, &left);
  const bool clean = bad.empty() || (o.fix && left.empty());
  if (o.json) {
    nlohmann::ordered_json j = json_document();
    j["directory"] = store.directory().string();
    j["device_filter"] = device_filter_json(o);
    j["entries"] = entries.size();
    j["valid"] = entries.size() - bad.size();
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const auto* e : bad)
      list.push_back({{"path", e->path.string()},
                      {"kind", to_string(e->kind)},
                      {"key", e->key_hex},
                      {"problem", e->problem},
                      {"deletable", e->deletable},
                      {"fix", e->fix}});
    j["bad"] = list;
    j["fix"] = o.fix;
    j["removed"] = removed;
    j["left"] = leftovers_json(left);
    std::cout << json_text(j) << "\n";
  } else {
    std::cout << "verifying " << entries.size() << " entr" << (entries.size() == 1 ? "y" : "ies") << " in "
              << format_directory(store) << "\n";
    for (const auto* e : bad) {
      std::cout << "  BAD  " << e->path.string() << ": " << e->problem << "\n";
      if (!e->deletable && !o.fix)
        std::cout << "       --fix leaves it (vgpu deletes only its own entry files). Fix: " << e->fix << ".\n";
    }
    std::cout << entries.size() - bad.size() << " valid, " << bad.size() << " bad";
    if (o.fix) {
      std::cout << "; removed " << removed << "\n";
      print_leftovers(std::cout, left);
    } else {
      std::cout << (bad.empty() ? "\n" : "; run `vgpu-probe cache verify --fix` to delete the bad entries\n");
    }
  }
  return clean ? 0 : 1;
}

/// What `cache export FILE` and `cache import FILE` were given.
struct BundleOptions {
  bool json = false;
  std::string file;
};

/// Returns a bundle report as the JSON object `cache export|import --json` prints.
nlohmann::ordered_json bundle_json(const CacheBundleReport& r, bool import) {
  nlohmann::ordered_json j = json_document();
  j["bundle"] = r.bundle.string();
  j["directory"] = r.directory.string();
  if (import) {
    j["imported"] = r.imported;
    j["present"] = r.present;
    j["rejected"] = r.rejected;
    j["other_fingerprint_entries"] = r.other_fingerprint_entries;
  } else {
    j["exported"] = r.exported;
    j["skipped"] = r.skipped;
  }
  j["fingerprints"] = r.fingerprints;
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const auto& e : r.entries) {
    nlohmann::ordered_json o{
        {"kind", e.kind}, {"key", e.key}, {"fingerprint", e.fingerprint}, {"bytes", e.bytes}, {"status", e.status}};
    o["reason"] = e.reason.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(e.reason);
    if (import) o["this_machine"] = e.this_machine;
    list.push_back(std::move(o));
  }
  j["entries"] = list;
  return j;
}

/// Prints the entries an export skipped or an import rejected, one line each, with why.
void print_bundle_problems(std::ostream& os, const CacheBundleReport& r) {
  for (const auto& e : r.entries)
    if (e.status == "skipped" || e.status == "rejected")
      os << "  " << (e.status == "skipped" ? "SKIPPED " : "REJECTED ") << e.kind << "/" << e.key << ": " << e.reason
         << "\n";
}

/// `cache export FILE`: every valid entry of the cache directory into one bundle file; FILE "-"
/// writes the bundle to standard output, and the report then goes to stderr.
int run_export(const BundleOptions& o) {
  const bool to_stdout = o.file == "-";
  if (to_stdout && o.json)
    throw vgpu::Error(vgpu::ErrorCategory::invalid_argument,
                      "cache export - --json would print the bundle and the JSON report both on standard output.",
                      "write the bundle to a FILE to get the --json report, or leave --json out (the report then "
                      "goes to stderr)");
  if (to_stdout && vgpu::platform::is_terminal(stdout))
    throw vgpu::Error(
        vgpu::ErrorCategory::invalid_argument,
        "cache export - writes a binary bundle to standard output, which is a terminal.",
        "redirect it to a file or a pipe: `vgpu-probe cache export - > FILE`, `... | ssh HOST 'cat > FILE'`");
  const auto directory = DiskStoreOptions::from_env().directory;
  const CacheBundleReport r =
      to_stdout ? export_cache_bundle(directory, std::cout) : export_cache_bundle(directory, o.file);
  std::ostream& os = to_stdout ? std::cerr : std::cout;
  if (o.json) {
    os << json_text(bundle_json(r, false)) << "\n";
  } else {
    os << "exported " << r.exported << " entr" << (r.exported == 1 ? "y" : "ies") << " (" << r.fingerprints.size()
       << " fingerprint" << (r.fingerprints.size() == 1 ? "" : "s") << ") from " << r.directory.string() << " to "
       << (to_stdout ? std::string("standard output") : r.bundle.string()) << "\n";
    print_bundle_problems(os, r);
    if (r.skipped) os << r.skipped << " invalid entries were left out (see above)\n";
  }
  return r.skipped == 0 ? 0 : 1;
}

/// `cache import FILE`: every good entry of a bundle into the cache directory.
int run_import(const BundleOptions& o) {
  CacheBundleReport r;
  try {
    r = import_cache_bundle(o.file, DiskStoreOptions::from_env().directory);
  } catch (const vgpu::Error& e) {
    // A bundle of a newer version is not_supported in the library; here it is what any other
    // unusable FILE is, a bad argument value (exit 2).
    if (e.category() == vgpu::ErrorCategory::not_supported) throw ArgumentError(e);
    throw;
  }
  if (o.json) {
    std::cout << json_text(bundle_json(r, true)) << "\n";
  } else {
    std::cout << "imported " << r.imported << ", already present " << r.present << ", rejected " << r.rejected
              << " (from " << r.bundle.string() << " into " << r.directory.string() << ")\n";
    if (r.other_fingerprint_entries)
      std::cout << "  " << r.other_fingerprint_entries
                << " entries are for devices this machine does not have: kept, never used here\n";
    print_bundle_problems(std::cout, r);
  }
  return r.rejected == 0 ? 0 : 1;
}

}  // namespace

void add_cache_command(CLI::App& app, std::function<int()>& action) {
  auto options = std::make_shared<CacheOptions>();
  CLI::App* cache = app.add_subcommand(
      "cache",
      "Inspect or clean the on-disk kernel cache (VGPU_CACHE_DIR, else $XDG_CACHE_HOME/vgpu, else ~/.cache/vgpu)");
  cache->require_subcommand(1);
  // Also here, so `vgpu-probe cache --json stats` works like the other positions.
  cache->add_flag("--json", options->json, "Print one JSON object (as the subcommand's --json)");

  add_cache_list_command(app, *cache, action);

  CLI::App* stats =
      cache->add_subcommand("stats", "Print the directory, whether it is enabled, entries and bytes per kind");
  stats->add_flag("--json", options->json, "Print one JSON object");
  add_device_option(*stats, options->devices, "count only the entries built for or measured on these devices");
  stats->callback([&action, &app, options] {
    action = [&app, options] {
      options->json = options->json || json_requested(app);
      return run_stats(*options);
    };
  });

  CLI::App* clear = cache->add_subcommand(
      "clear", "Delete every entry and print how many, and what could not be deleted (exit 1 when something is left)");
  clear->add_flag("--json", options->json, "Print one JSON object");
  add_device_option(*clear, options->devices,
                    "delete only the entries built for or measured on these devices (their headers are read)");
  clear->add_flag("--selections", options->selections,
                  "Delete only the stored device selections (choices, their pointers, prediction models), keeping the "
                  "compiled kernels: the next process measures every device again");
  clear->callback([&action, &app, options] {
    action = [&app, options] {
      options->json = options->json || json_requested(app);
      return run_clear(*options);
    };
  });

  CLI::App* verify = cache->add_subcommand(
      "verify",
      "Check every entry's header, checksum and payload (SPIR-V validated, ...) and list the bad ones (exit 1 when "
      "some remain)");
  verify->add_flag("--fix", options->fix,
                   "Delete the bad entries (only vgpu's own entry files: anything else is listed and left)");
  verify->add_flag("--json", options->json, "Print one JSON object");
  add_device_option(*verify, options->devices,
                    "check (and with --fix delete) only the entries built for or measured on these devices");
  verify->callback([&action, &app, options] {
    action = [&app, options] {
      options->json = options->json || json_requested(app);
      return run_verify(*options);
    };
  });

  auto bundle = std::make_shared<BundleOptions>();
  CLI::App* exp = cache->add_subcommand(
      "export",
      "Write every valid entry and device selection (all devices) to one bundle FILE (exit 1 when invalid "
      "entries were left out, 2 when FILE exists and is not a regular file)");
  exp->add_option("FILE", bundle->file,
                  "The bundle file to write (replaced atomically, keeping its permissions; refused when it exists "
                  "and is not a regular file: a symlink, FIFO, device or directory), or - for standard output")
      ->required();
  exp->add_flag("--json", bundle->json, "Print one JSON object");
  exp->callback([&action, &app, bundle] {
    action = [&app, bundle] {
      bundle->json = bundle->json || json_requested(app);
      return run_export(*bundle);
    };
  });

  CLI::App* imp = cache->add_subcommand(
      "import",
      "Check every entry of a bundle FILE and write the good ones into the cache (exit 1 when some were "
      "rejected, 2 when the file is not a usable bundle, also one of a newer version: nothing is imported then)");
  imp->add_option("FILE", bundle->file, "The bundle file to read")->required();
  imp->add_flag("--json", bundle->json, "Print one JSON object");
  imp->callback([&action, &app, bundle] {
    action = [&app, bundle] {
      bundle->json = bundle->json || json_requested(app);
      return run_import(*bundle);
    };
  });
}

}  // namespace vgpu::probe
