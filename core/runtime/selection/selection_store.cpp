// SPDX-License-Identifier: Apache-2.0
// core/runtime/selection/selection_store.cpp — selections as JSON (selection_json.cpp) in the L2 store.
#include "selection_store.hpp"

#include "selection_json.hpp"
#include "vgpu/cache/disk_store.hpp"
#include "vgpu/cache/kernel_key.hpp"
#include "vgpu/log.hpp"

namespace vgpu::detail {
namespace {

// The store checks an entry's fingerprint text on load: for a selection it is the key text
// itself (every device's id and fingerprint), so a hash collision can never pass.
DeviceFingerprint key_fingerprint(const std::string& key_text) {
  return DeviceFingerprint{key_text, cache::hash64(key_text)};
}

cache::KernelKey key_of(const std::string& key_text) {
  return cache::KernelKey{cache::hash64("vgpu.selection.hi|" + key_text),
                          cache::hash64("vgpu.selection.lo|" + key_text)};
}

}  // namespace

std::string record_label(std::string_view key_text) {
  // Key texts read "<record>;v=N;name=value;...": the record's kind, then what it is about.
  std::string_view record = key_text.substr(0, key_text.find(';'));
  std::string op, feature, dtype, cls, device;
  for (std::size_t at = key_text.find(';'); at != std::string_view::npos;) {
    const std::size_t next = key_text.find(';', at + 1);
    const std::string_view field = key_text.substr(at + 1, next == std::string_view::npos ? next : next - at - 1);
    const std::size_t eq = field.find('=');
    const std::string_view name = field.substr(0, eq);
    const std::string value(eq == std::string_view::npos ? std::string_view() : field.substr(eq + 1));
    if (name == "op") op = value;
    if (name == "feature") feature = value;
    if (name == "dtype") dtype = value;
    if (name == "class") cls = value;
    if (name == "device") device = value.substr(0, value.find('='));  // "<id>=<fingerprint hex>"
    at = next;
  }
  const std::string what = record == "select"          ? "selection"
                           : record == "select-last"   ? "selection pointer"
                           : record == "model"         ? "prediction model"
                           : record == "variant"       ? "variant choice"
                           : record == "feature-check" ? "feature check"
                                                       : std::string(record);
  std::string label = what + ":";
  if (!op.empty()) label += " " + op;
  if (!feature.empty()) label += " " + feature;
  if (!dtype.empty()) label += " " + dtype;
  if (!cls.empty()) label += " class " + cls;
  if (!device.empty()) label += " on " + device;
  return label;
}

void warn_dropped_record(const std::string& text) { log(LogLevel::warn, text); }

namespace {

// The warning for a dropped selection: the key text reads
// "select;v=3;vgpu=…;plan=…;op=<op>;class=<class>;devices=...", so it names the op and class.
std::string dropped_selection_warning(const std::string& key_text, const std::string& why) {
  const auto from = key_text.find("op="), to = key_text.find(";devices=");
  std::string what = from != std::string::npos && to != std::string::npos && to > from
                         ? key_text.substr(from + 3, to - from - 3)
                         : std::string("?");
  if (const auto semi = what.find(";class="); semi != std::string::npos) what.replace(semi, 7, " class ");
  return "selection cache: ignoring the stored selection for " + what + " (" + why + "); calibrating again.";
}

}  // namespace

std::optional<Selection> load_selection(cache::DiskStore& store, const std::string& key_text) {
  return load_record(
      store, key_text, [](std::string_view text, std::string& why) { return selection_from_json(text, &why); },
      [&](const std::string& why) { return dropped_selection_warning(key_text, why); });
}

void drop_selection(cache::DiskStore& store, const std::string& key_text, const std::string& why) {
  warn_dropped_record(dropped_selection_warning(key_text, why));
  reject_selection(store, key_text);
}

void store_selection(cache::DiskStore& store, const std::string& key_text, const Selection& selection) {
  if (!store.enabled()) return;
  const std::string text = selection_to_json(selection);
  const auto cost_us = static_cast<std::uint64_t>(selection.calibration_seconds * 1e6);
  store.store(cache::EntryKind::selection, key_of(key_text), key_fingerprint(key_text),
              {reinterpret_cast<const std::uint8_t*>(text.data()), text.size()}, cost_us, record_label(key_text));
}

std::optional<std::string> load_selection_text(cache::DiskStore& store, const std::string& key_text) {
  if (!store.enabled()) return std::nullopt;
  auto blob = store.load(cache::EntryKind::selection, key_of(key_text), key_fingerprint(key_text));
  if (!blob) return std::nullopt;
  return std::string(reinterpret_cast<const char*>(blob->data()), blob->size());
}

void store_selection_text(cache::DiskStore& store, const std::string& key_text, const std::string& text,
                          std::uint64_t cost_us) {
  if (!store.enabled()) return;
  store.store(cache::EntryKind::selection, key_of(key_text), key_fingerprint(key_text),
              {reinterpret_cast<const std::uint8_t*>(text.data()), text.size()}, cost_us, record_label(key_text));
}

void reject_selection(cache::DiskStore& store, const std::string& key_text) {
  store.reject(cache::EntryKind::selection, key_of(key_text), "invalid");
}

}  // namespace vgpu::detail
