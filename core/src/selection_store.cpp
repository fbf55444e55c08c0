// core/src/selection_store.cpp — selections as JSON in the L2 store.
#include "selection_store.hpp"

#include <nlohmann/json.hpp>

#include "vgpu/cache/disk_store.hpp"
#include "vgpu/cache/kernel_key.hpp"
#include "vgpu/log.hpp"

namespace vgpu::detail {
namespace {

constexpr int kPayloadVersion = 1;

// The store checks an entry's fingerprint text on load: for a selection it is the key text
// itself (every device's id and fingerprint), so a hash collision can never pass.
DeviceFingerprint key_fingerprint(const std::string& key_text) {
  return DeviceFingerprint{key_text, cache::hash64(key_text)};
}

cache::KernelKey key_of(const std::string& key_text) {
  return cache::KernelKey{cache::hash64("vgpu.selection.hi|" + key_text), cache::hash64("vgpu.selection.lo|" + key_text)};
}

nlohmann::json to_json(const Selection& s) {
  nlohmann::json cands = nlohmann::json::array();
  for (const auto& c : s.candidates)
    cands.push_back({{"device", c.device}, {"eligible", c.eligible}, {"seconds", c.seconds}, {"runs", c.runs},
                     {"note", c.note}});
  return {{"version", kPayloadVersion},
          {"op", s.op},
          {"calibration_shape", s.calibration_shape},
          {"size_class", s.size_class},
          {"device", s.device},
          {"calibration_seconds", s.calibration_seconds},
          {"candidates", cands}};
}

}  // namespace

std::optional<Selection> load_selection(const std::string& key_text) {
  auto& store = cache::DiskStore::global();
  if (!store.enabled()) return std::nullopt;
  auto blob = store.load(cache::EntryKind::selection, key_of(key_text), key_fingerprint(key_text));
  if (!blob) return std::nullopt;
  try {
    const auto j = nlohmann::json::parse(blob->begin(), blob->end());
    if (j.at("version").get<int>() != kPayloadVersion) return std::nullopt;
    Selection s;
    s.op = j.at("op").get<std::string>();
    s.calibration_shape = j.at("calibration_shape").get<Shape>();
    s.size_class = j.at("size_class").get<std::uint32_t>();
    s.device = j.at("device").get<std::string>();
    s.calibration_seconds = j.at("calibration_seconds").get<double>();
    for (const auto& c : j.at("candidates"))
      s.candidates.push_back(SelectionCandidate{c.at("device").get<std::string>(), c.at("eligible").get<bool>(),
                                                c.at("seconds").get<double>(), c.at("runs").get<int>(), false,
                                                c.at("note").get<std::string>()});
    if (s.device.empty() || s.candidates.empty()) return std::nullopt;
    s.source = SelectionSource::persisted;
    return s;
  } catch (const nlohmann::json::exception& e) {
    // The checksums passed, so this is a payload of another vgpu build: recalibrate over it.
    log(LogLevel::warn, std::string("selection cache: unreadable entry (") + e.what() + "); recalibrating.");
    store.reject(cache::EntryKind::selection, key_of(key_text), "unreadable selection");
    return std::nullopt;
  }
}

void store_selection(const std::string& key_text, const Selection& selection) {
  auto& store = cache::DiskStore::global();
  if (!store.enabled()) return;
  const std::string text = to_json(selection).dump();
  const auto cost_us = static_cast<std::uint64_t>(selection.calibration_seconds * 1e6);
  store.store(cache::EntryKind::selection, key_of(key_text), key_fingerprint(key_text),
              {reinterpret_cast<const std::uint8_t*>(text.data()), text.size()}, cost_us);
}

}  // namespace vgpu::detail
