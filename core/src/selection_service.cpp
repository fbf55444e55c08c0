// SPDX-License-Identifier: Apache-2.0
// core/src/selection_service.cpp — measured device selection: lookup, persistence, demotion.
#include "selection_service.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string_view>

#include "selection_store.hpp"
#include "size_class.hpp"
#include "vgpu/error.hpp"
#include "vgpu/log.hpp"
#include "vgpu/ops.hpp"

namespace vgpu::detail {
namespace {

using calibration::Clock;
using calibration::first_line;
using calibration::seconds_since;

// The in-memory table's key: one entry per op and size class.
std::string entry_key(const std::string& op, const Shape& shape) {
  return op + "#" + std::to_string(size_class(op, shape));
}

// Why a selection read from disk does not belong to op's size_class on devices (empty when it
// does): another op or class, a device that is not among them, or a choice that is not its
// first eligible candidate.
std::string persisted_problem(const Selection& s, const std::string& op, std::uint32_t size_class,
                              const std::vector<std::string>& devices) {
  if (s.op != op || s.size_class != size_class)
    return "it is for '" + s.op + "' class " + std::to_string(s.size_class) + ", not '" + op + "' class " +
           std::to_string(size_class);
  for (const SelectionCandidate& c : s.candidates)
    if (std::find(devices.begin(), devices.end(), c.device) == devices.end())
      return "it names device '" + c.device + "', which is not present";
  const auto first = std::find_if(s.candidates.begin(), s.candidates.end(), [](auto& c) { return c.eligible; });
  if (first == s.candidates.end() || first->device != s.device)
    return "its choice '" + s.device + "' is not its first eligible candidate";
  return {};
}

// Whether s may be stored: only a real comparison, and none where a device failed — it may only
// have failed this once (out of memory, say), so the next process measures again.
bool worth_storing(const Selection& s) {
  return s.source == SelectionSource::calibrated &&
         std::none_of(s.candidates.begin(), s.candidates.end(),
                      [](const SelectionCandidate& c) { return c.note.starts_with("failed: "); });
}

// Marks e's demoted candidates in s and points s at the first usable one (source fallback when
// that is not the stored choice); throws unavailable when none is left.
void apply_demotions(Selection& s, const std::set<std::string>& demoted, const std::string& op, const Shape& shape) {
  for (auto& c : s.candidates) {
    c.demoted = demoted.contains(c.device);
    if (c.demoted) c.note = "demoted: failed for this op";
  }
  auto usable = std::find_if(s.candidates.begin(), s.candidates.end(), [](auto& c) { return c.eligible && !c.demoted; });
  if (usable == s.candidates.end())
    fail(ErrorCategory::unavailable, "every device that can run '" + op + "' at " + to_string(shape) + " failed for it.",
         "see the log for each device's error; check the devices with vgpu-probe.");
  if (usable->device != s.device) s.source = SelectionSource::fallback;
  s.device = usable->device;
}

// The ids of devices.
std::vector<std::string> ids_of(const std::vector<DeviceInfo>& devices) {
  std::vector<std::string> ids;
  for (const auto& d : devices) ids.push_back(d.id());
  return ids;
}

// The key of the pointer to op's size class's last persisted selection: op, class and the
// backends the runtime may probe, nothing that needs probing one, so that a later process can
// follow it after probing only the chosen device's backend (issue 17: a process whose choice is
// cpu:0 loads no GPU runtime). The "select-last" prefix keeps it apart from selection keys.
std::string last_key_text(const std::string& op, std::uint32_t size_class, const std::string& scope) {
  return "select-last;v=1;op=" + op + ";class=" + std::to_string(size_class) + ";scope=" + scope;
}

// The sorted "id=fingerprint" items of a selection key text (selection_key_text).
std::vector<std::string> key_items(const std::string& key_text) {
  std::vector<std::string> items;
  const auto at = key_text.find(";devices=");
  if (at == std::string::npos) return items;
  std::string_view rest = std::string_view(key_text).substr(at + 9);
  while (!rest.empty()) {
    const auto comma = rest.find(',');
    if (const std::string_view item = rest.substr(0, comma); !item.empty()) items.emplace_back(item);
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  std::sort(items.begin(), items.end());
  return items;
}

}  // namespace

std::string selection_key_text(const std::string& op, std::uint32_t size_class, const std::vector<DeviceInfo>& devices) {
  std::vector<std::string> parts;
  for (const auto& d : devices) parts.push_back(d.id() + "=" + d.fingerprint.hex());
  std::sort(parts.begin(), parts.end());
  std::string text = "select;v=1;op=" + op + ";class=" + std::to_string(size_class) + ";devices=";
  for (const auto& p : parts) text += p + ",";
  return text;
}

std::optional<Selection> SelectionService::load(const std::string& key_text, const std::string& op,
                                                std::uint32_t size_class, const std::vector<std::string>& devices) {
  auto loaded = load_selection(*store_, key_text);
  if (!loaded) return std::nullopt;
  // The key holds every device's id and fingerprint, so a sound entry names only devices of
  // this set; one naming another (written so by hand, a tool or another build) is dropped
  // and calibrated over, never followed to a device that is not there.
  if (std::string why = persisted_problem(*loaded, op, size_class, devices); !why.empty()) {
    drop_selection(*store_, key_text, why);
    return std::nullopt;
  }
  return loaded;
}

Selection SelectionService::find_out(const std::string& op, const Shape& shape, const PlanFactory& factory,
                                     std::uint64_t work, bool recalibrate, const std::set<std::string>& demoted) {
  if (recalibrate) {
    // The order of the others came from a calibration that may have stopped them after one
    // noisy warm-up against the now demoted device: measure them again, without it.
    Selection s = calibration::calibrate({op, shape, factory, work}, source_, demoted, &turns_);
    s.source = SelectionSource::fallback;
    return s;
  }
  const std::uint32_t cls = size_class_of_work(work);
  if (auto followed = follow_last(op, cls)) {
    followed->shape = shape;
    return *followed;
  }
  const std::vector<DeviceInfo> devices = source_.devices();
  const std::string key_text = selection_key_text(op, cls, devices);
  if (auto loaded = load(key_text, op, cls, ids_of(devices))) {
    remember_last(op, cls, key_text, loaded->device);
    loaded->shape = shape;
    return *loaded;
  }
  Selection s = calibration::calibrate({op, shape, factory, work}, source_, {}, &turns_);
  if (worth_storing(s)) {
    store_selection(*store_, key_text, s);
    remember_last(op, cls, key_text, s.device);
  }
  log(LogLevel::info, op + " at " + to_string(shape) + " → " + s.device + " (calibrated in " +
                          std::to_string(static_cast<int>(s.calibration_seconds * 1000)) + " ms)");
  return s;
}

void SelectionService::remember_last(const std::string& op, std::uint32_t size_class, const std::string& key_text,
                                     const std::string& device) {
  if (!store_->enabled() || source_.scope.empty()) return;
  const std::string last_key = last_key_text(op, size_class, source_.scope);
  const nlohmann::ordered_json j = {{"v", 1}, {"device", device}, {"key", key_text}};
  const std::string text = j.dump();
  if (load_selection_text(*store_, last_key) == text) return;  // already so: no rewrite
  store_selection_text(*store_, last_key, text, 0);
}

std::optional<Selection> SelectionService::follow_last(const std::string& op, std::uint32_t size_class) {
  if (!store_->enabled() || source_.scope.empty() || !source_.backend_devices) return std::nullopt;
  const std::string last_key = last_key_text(op, size_class, source_.scope);
  const std::optional<std::string> text = load_selection_text(*store_, last_key);
  if (!text) return std::nullopt;
  std::string device, key_text;
  {
    const nlohmann::json j = nlohmann::json::parse(*text, nullptr, false);
    const auto str = [&](const char* name) -> const std::string* {
      if (!j.is_object()) return nullptr;
      const auto it = j.find(name);
      return it != j.end() && it->is_string() ? it->get_ptr<const std::string*>() : nullptr;
    };
    const auto v = j.is_object() ? j.find("v") : j.end();
    const std::string* d = str("device");
    const std::string* k = str("key");
    if (v == j.end() || !v->is_number_integer() || v->get<std::int64_t>() != 1 || !d || !k ||
        !k->starts_with("select;v=1;op=" + op + ";class=" + std::to_string(size_class) + ";devices=")) {
      // Written so by another build, a tool or a hand: drop it; the full path writes a sound one.
      log(LogLevel::warn, "selection cache: ignoring the stored pointer to the last selection for " + op + " class " +
                              std::to_string(size_class) + " (it is not a version 1 pointer for it); enumerating.");
      reject_selection(*store_, last_key);
      return std::nullopt;
    }
    device = *d;
    key_text = *k;
  }
  BackendKind kind{};
  try {
    kind = parse_backend_kind(device.substr(0, device.find(':')));
  } catch (const Error&) {
    return std::nullopt;  // a backend this build does not know: the full path decides
  }
  // Only the chosen device's backend is probed. Every device it has must be in the key as it
  // is now (same ids, same fingerprints), else the choice may be stale: enumerate everything.
  // The other backends' devices are taken as the key recorded them; a change there is not seen
  // until a process enumerates (vgpu-probe, a recalibration after a demotion).
  const std::string prefix = std::string(to_string(kind)) + ":";
  std::vector<std::string> here;
  for (const DeviceInfo& d : source_.backend_devices(kind)) here.push_back(d.id() + "=" + d.fingerprint.hex());
  std::sort(here.begin(), here.end());
  const std::vector<std::string> items = key_items(key_text);
  std::vector<std::string> recorded, ids;
  for (const std::string& item : items) {
    if (item.starts_with(prefix)) recorded.push_back(item);
    ids.push_back(item.substr(0, item.find('=')));
  }
  if (here != recorded || std::find(ids.begin(), ids.end(), device) == ids.end()) return std::nullopt;
  return load(key_text, op, size_class, ids);
}

Selection SelectionService::forced_selection(const std::string& op, const Shape& shape) {
  Selection s;
  s.op = op;
  s.shape = shape;
  s.size_class = size_class(op, shape);
  s.device = source_.open(forced_).info().id();
  s.source = SelectionSource::forced;
  s.candidates.push_back(SelectionCandidate{s.device, true, 0, 0, false, "forced by VGPU_DEVICE"});
  return s;
}

Selection SelectionService::explain(const std::string& op, const Shape& shape, const PlanFactory& given) {
  const auto t0 = Clock::now();
  const std::uint64_t work = selection_work(op, shape);  // validates op and shape first
  PlanFactory factory = given;
  if (!factory) {
    ops::check_shape(op, shape);  // with no factory, op must be a built-in
    factory = [op](const DeviceInfo& d, const Shape& sh) { return ops::plan(op, d, sh); };
  }
  if (!forced_.empty()) {
    Selection s = forced_selection(op, shape);
    s.lookup_seconds = seconds_since(t0);
    return s;
  }
  const std::string key = entry_key(op, shape);
  std::unique_lock lock(mutex_);
  for (;;) {
    auto it = entries_.find(key);
    if (it != entries_.end() && !it->second.recalibrate) {
      Selection s = it->second.selection;
      const std::set<std::string> demoted = it->second.demoted;
      lock.unlock();
      s.shape = shape;
      apply_demotions(s, demoted, op, shape);
      s.lookup_seconds = seconds_since(t0);
      return s;
    }
    if (auto f = flights_.find(key); f != flights_.end()) {
      const std::shared_ptr<Flight> flight = f->second;
      if (flight->runner == std::this_thread::get_id())
        fail(ErrorCategory::invalid_argument,
             "the device for '" + op + "' at " + to_string(shape) +
                 " was asked for while this thread is choosing it (its factory selected the same op and size class).",
             "build the plan without selecting a device for the op being calibrated; other ops are fine.");
      done_.wait(lock, [&] { return flight->finished; });
      if (flight->error) std::rethrow_exception(flight->error);
      continue;  // now in the table
    }
    // This thread finds it out, without the lock. When recalibrating, other lookups meanwhile
    // get the old order with the demotions applied.
    const bool recalibrate = it != entries_.end();
    std::set<std::string> demoted;
    if (recalibrate) {
      it->second.recalibrate = false;
      demoted = it->second.demoted;
    }
    auto flight = std::make_shared<Flight>();
    flights_.emplace(key, flight);
    lock.unlock();
    std::optional<Selection> found;
    std::exception_ptr error;
    try {
      found = find_out(op, shape, factory, work, recalibrate, demoted);
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    flights_.erase(key);
    if (found) {
      Entry& e = entries_[key];  // a demotion meanwhile kept its devices (and maybe asked again)
      e.selection = std::move(*found);
    }
    flight->finished = true;
    flight->error = error;
    done_.notify_all();
    if (error) std::rethrow_exception(error);
  }
}

bool SelectionService::demote(const std::string& op, const Shape& shape, const std::string& device_id,
                              const std::string& reason) {
  const std::string key = entry_key(op, shape);
  bool other_left = false;
  {
    std::lock_guard lock(mutex_);
    auto it = entries_.find(key);
    if (it == entries_.end()) return false;
    Entry& e = it->second;
    e.demoted.insert(device_id);
    epoch_.fetch_add(1, std::memory_order_acq_rel);
    other_left = std::any_of(e.selection.candidates.begin(), e.selection.candidates.end(),
                             [&](const SelectionCandidate& c) { return c.eligible && !e.demoted.contains(c.device); });
    if (other_left) e.recalibrate = true;
  }
  // Logged without the lock (the log is a leaf: nothing else is locked under it).
  log(LogLevel::warn, device_id + " failed for '" + op + "' (" + first_line(reason) + "); " +
                          (other_left ? "the other devices are measured again for this size class."
                                      : "no other device is left for it."));
  return other_left;
}

}  // namespace vgpu::detail
