// SPDX-License-Identifier: Apache-2.0
// core/runtime/selection/selection_service.cpp — measured device selection: lookup, persistence, demotion.
#include "selection_service.hpp"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string_view>

#include "builtin_plans.hpp"
#include "plan_hash.hpp"
#include "selection_store.hpp"
#include "size_class.hpp"
#include "vgpu/backend/exit_order.hpp"
#include "vgpu/error.hpp"
#include "vgpu/inventory.hpp"
#include "vgpu/log.hpp"
#include "vgpu/ops.hpp"

namespace vgpu::detail {
namespace {

using calibration::Clock;
using calibration::first_line;
using calibration::seconds_since;

// The start of this vgpu's selection key texts (selection_key_text).
constexpr std::string_view kSelectionKeyPrefix = "select;v=3;";

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
  auto usable =
      std::find_if(s.candidates.begin(), s.candidates.end(), [](auto& c) { return c.eligible && !c.demoted; });
  if (usable == s.candidates.end())
    fail(ErrorCategory::unavailable,
         "every device that can run '" + op + "' at " + to_string(shape) + " failed for it.",
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

std::string selection_key_text(const std::string& op, std::uint32_t size_class, const std::vector<DeviceInfo>& devices,
                               const std::string& plan) {
  std::vector<std::string> parts;
  for (const auto& d : devices) parts.push_back(d.id() + "=" + d.fingerprint.hex());
  std::sort(parts.begin(), parts.end());
  // v=3: selections whose candidates' results were checked (issue 29); v=2 and older keys hold
  // choices made without checking, which are never looked up again (follow_last).
  std::string text = std::string(kSelectionKeyPrefix) + "vgpu=" + version_string() + ";plan=" + plan + ";op=" + op +
                     ";class=" + std::to_string(size_class) + ";devices=";
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
                                     std::uint64_t work, bool recalibrate, const std::set<std::string>& demoted,
                                     std::optional<std::string> followed_incumbent,
                                     const std::function<bool()>& cancelled) {
  calibration::Request request{op, shape, factory, work};
  request.store = store_;  // prediction models persist beside the selections
  request.cancelled = cancelled;
  if (recalibrate) {
    // The order of the others came from a calibration that may have stopped them after one
    // noisy warm-up against the now demoted device: measure them again, without it.
    Selection s = calibration::calibrate(request, source_, demoted, &turns_);
    s.source = SelectionSource::fallback;
    return s;
  }
  const std::uint32_t cls = size_class_of_work(work);
  std::string incumbent;
  if (followed_incumbent) {
    incumbent = *followed_incumbent;
  } else {
    Followed followed = follow_last(op, cls, factory);
    if (followed.fresh) {
      followed.fresh->shape = shape;
      return *followed.fresh;
    }
    incumbent = followed.incumbent;
  }
  const std::vector<DeviceInfo> devices = source_.devices();
  const std::string key_text = full_key_text(op, cls, devices, factory, shape);
  if (auto loaded = load(key_text, op, cls, ids_of(devices))) {
    remember_last(op, cls, key_text, loaded->device, factory, shape);
    loaded->shape = shape;
    return *loaded;
  }
  // A recheck (the device, driver, vgpu or the op's plan changed since the choice was stored)
  // keeps the old choice where it is still within the tie factor of the best.
  request.incumbent = incumbent;
  Selection s = calibrate_and_store(request, cls, key_text);
  log(LogLevel::info, op + " at " + to_string(shape) + " → " + s.device + " (calibrated in " +
                          std::to_string(static_cast<int>(s.calibration_seconds * 1000)) + " ms" +
                          (incumbent.empty() ? std::string() : ", rechecking " + incumbent) + ")");
  return s;
}

std::optional<DeviceInfo> SelectionService::find_device(const std::string& id) {
  BackendKind kind{};
  try {
    kind = parse_backend_kind(id.substr(0, id.find(':')));
  } catch (const Error&) {
    return std::nullopt;  // a backend this build does not name
  }
  for (const DeviceInfo& d : source_.backend_devices(kind))
    if (d.id() == id) return d;
  return std::nullopt;
}

std::string SelectionService::plan_hash_text(const std::string& op, const PlanFactory& factory, const DeviceInfo& info,
                                             const Shape& shape) {
  // A built-in's plan changes only with vgpu, whose version is in the key already; and its plan
  // may depend on a measured variant choice, which would make the hash differ between processes.
  const std::vector<std::string> builtins = ops::names();
  if (std::find(builtins.begin(), builtins.end(), op) != builtins.end()) return "builtin";
  try {
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(plan_source_hash(factory(info, shape))));
    return buf;
  } catch (const Error&) {
    return "none";  // the factory cannot build it there now: the comparison then fails
  }
}

void SelectionService::remember_last(const std::string& op, std::uint32_t size_class, const std::string& key_text,
                                     const std::string& device, const PlanFactory& factory, const Shape& shape) {
  if (!store_->enabled() || source_.scope.empty()) return;
  const std::string last_key = last_key_text(op, size_class, source_.scope);
  const std::optional<DeviceInfo> chosen = find_device(device);
  if (!chosen) return;  // a device of a backend this build does not name, or gone: no pointer
  const std::string plan = plan_hash_text(op, factory, *chosen, shape);
  nlohmann::ordered_json j = {{"v", 2},       {"device", device}, {"key", key_text}, {"vgpu", version_string()},
                              {"plan", plan}, {"shape", shape}};
  const std::string text = j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  if (load_selection_text(*store_, last_key) == text) return;  // already so: no rewrite
  store_selection_text(*store_, last_key, text, 0);
}

SelectionService::Followed SelectionService::follow_last(const std::string& op, std::uint32_t size_class,
                                                         const PlanFactory& factory) {
  Followed out;
  if (!store_->enabled() || source_.scope.empty() || !source_.backend_devices) return out;
  const std::string last_key = last_key_text(op, size_class, source_.scope);
  const std::optional<std::string> text = load_selection_text(*store_, last_key);
  if (!text) return out;
  std::string device, key_text, plan, vgpu_version;
  std::int64_t version = 0;
  Shape shape;
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
    if (v != j.end() && v->is_number_integer()) version = v->get<std::int64_t>();
    const std::string key_start = ";op=" + op + ";class=" + std::to_string(size_class) + ";devices=";
    const bool sound = (version == 1 || version == 2) && d && k && k->starts_with("select;") &&
                       k->find(key_start) != std::string::npos && d->find(':') != std::string::npos;
    if (!sound) {
      // Written so by another build, a tool or a hand: drop it; the full path writes a sound one.
      log(LogLevel::warn, "selection cache: ignoring the stored pointer to the last selection for " + op + " class " +
                              std::to_string(size_class) + " (it is not a pointer for it); enumerating.");
      reject_selection(*store_, last_key);
      return out;
    }
    device = *d;
    key_text = *k;
    if (version == 2) {
      if (const std::string* p = str("plan")) plan = *p;
      if (const std::string* g = str("vgpu")) vgpu_version = *g;
      const auto sh = j.find("shape");
      if (sh != j.end() && sh->is_array() && sh->size() <= 8)
        for (const auto& e : *sh)
          if (e.is_number_unsigned()) shape.push_back(e.get<std::uint64_t>());
    }
  }
  BackendKind kind{};
  try {
    kind = parse_backend_kind(device.substr(0, device.find(':')));
  } catch (const Error&) {
    return out;  // a backend this build does not know: the full path decides
  }
  // Only the chosen device's backend is probed. Every device it has must be in the key as it
  // is now (same ids, same fingerprints), else the choice may be stale: enumerate everything.
  // The other backends' devices are taken as the key recorded them; a change there is not seen
  // until a process enumerates (vgpu-probe, a recalibration after a demotion, --recalibrate).
  const std::string prefix = std::string(to_string(kind)) + ":";
  std::vector<std::string> here;
  const DeviceInfo* chosen = nullptr;
  const std::vector<DeviceInfo> found = source_.backend_devices(kind);
  for (const DeviceInfo& d : found) {
    here.push_back(d.id() + "=" + d.fingerprint.hex());
    if (d.id() == device) chosen = &d;
  }
  if (chosen == nullptr) return out;  // the chosen device is gone: calibrate afresh
  // A choice stored before results were checked (a v=2 or older key) may be a device that
  // computes this op wrong (issue 29): it neither serves in the interim nor is kept as the
  // incumbent; the class is measured afresh, with checks.
  if (!key_text.starts_with(kSelectionKeyPrefix)) {
    log(LogLevel::info, "selection cache: the stored choice for " + op + " class " + std::to_string(size_class) +
                            " was made without checking results; measuring again.");
    return out;
  }
  // From here on the stored choice is a device that is still here: if anything else changed,
  // it is the incumbent of a recheck.
  out.incumbent = device;
  std::sort(here.begin(), here.end());
  const std::vector<std::string> items = key_items(key_text);
  std::vector<std::string> recorded, ids;
  for (const std::string& item : items) {
    if (item.starts_with(prefix)) recorded.push_back(item);
    ids.push_back(item.substr(0, item.find('=')));
  }
  if (version != 2 || vgpu_version != version_string() ||
      !key_text.starts_with(std::string(kSelectionKeyPrefix) + "vgpu=" + version_string() + ";plan="))
    out.why_stale = "it was chosen by another vgpu version";
  else if (here != recorded || std::find(ids.begin(), ids.end(), device) == ids.end())
    out.why_stale = "the devices of " + std::string(to_string(kind)) + " changed since (driver or device)";
  else if (!shape.empty() && plan != plan_hash_text(op, factory, *chosen, shape))
    out.why_stale = "the op's plan changed since (its kernel source or shape rules)";
  if (!out.why_stale.empty()) return out;
  out.fresh = load(key_text, op, size_class, ids);
  if (!out.fresh) out.incumbent.clear();  // the entry itself went: nothing to keep
  return out;
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

Selection SelectionService::explain(const std::string& op, const Shape& shape, const PlanFactory& given,
                                    bool interim_ok) {
  const auto t0 = Clock::now();
  const std::uint64_t work = selection_work(op, shape);  // validates op and shape first
  if (!given) ops::check_shape(op, shape);               // with no factory, op must be a built-in
  const PlanFactory factory = factory_for(op, given);
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
    if (const FlightState state = flights_.state(key); state != FlightState::none) {
      if (state == FlightState::running_here)
        fail(ErrorCategory::invalid_argument,
             "the device for '" + op + "' at " + to_string(shape) +
                 " was asked for while this thread is choosing it (its factory selected the same op and size class).",
             "build the plan without selecting a device for the op being calibrated; other ops are fine.");
      flights_.wait(lock, key);
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
    std::optional<Selection> found;
    BackgroundWorker::Job job;  // set when found is an interim selection
    flights_.run(
        lock, key,
        [&] {
          found = !recalibrate && interim_ok && background_ ? begin(key, op, shape, factory, work, job)
                                                            : find_out(op, shape, factory, work, recalibrate, demoted);
        },
        [&](std::monostate*, const std::exception_ptr&) {
          if (!found) return;
          Entry& e = entries_[key];  // a demotion meanwhile kept its devices (and maybe asked again)
          e.selection = std::move(*found);
          // Posted once the interim entry is in the table, which the job's result then replaces.
          // Refused only while shutting down: the interim device then simply stays.
          if (job) worker_.post(std::move(job));
        });
  }
}

Selection SelectionService::calibrate_and_store(const calibration::Request& request, std::uint32_t size_class,
                                                const std::string& key_text) {
  Selection s = calibration::calibrate(request, source_, {}, &turns_);
  if (worth_storing(s)) {
    store_selection(*store_, key_text, s);
    remember_last(request.op, size_class, key_text, s.device, request.factory, request.shape);
  }
  return s;
}

PlanFactory SelectionService::factory_for(const std::string& op, const PlanFactory& factory) {
  if (factory) return factory;
  return builtin_plan_factory(op);
}

std::string SelectionService::full_key_text(const std::string& op, std::uint32_t size_class,
                                            const std::vector<DeviceInfo>& devices, const PlanFactory& factory,
                                            const Shape& shape) {
  // The plan's sources, hashed on the first device by id (any fixed one will do: each key is
  // only ever compared with one made the same way).
  std::string plan = "none";
  if (!devices.empty()) {
    const auto first = std::min_element(devices.begin(), devices.end(),
                                        [](const DeviceInfo& a, const DeviceInfo& b) { return a.id() < b.id(); });
    plan = plan_hash_text(op, factory, *first, shape);
  }
  return selection_key_text(op, size_class, devices, plan);
}

Selection SelectionService::recalibrate(const std::string& op, const Shape& shape, const PlanFactory& given) {
  const std::uint64_t work = selection_work(op, shape);
  if (!given) ops::check_shape(op, shape);  // with no factory, op must be a built-in
  const PlanFactory factory = factory_for(op, given);
  if (!forced_.empty()) return forced_selection(op, shape);
  const std::string key = entry_key(op, shape);
  const std::uint32_t cls = size_class_of_work(work);
  std::string incumbent;
  {
    std::lock_guard lock(mutex_);
    if (auto it = entries_.find(key); it != entries_.end()) incumbent = it->second.selection.device;
  }
  if (incumbent.empty()) incumbent = follow_last(op, cls, factory).incumbent;  // the stored choice, stale or not
  const std::string key_text = full_key_text(op, cls, source_.devices(), factory, shape);
  calibration::Request request{op, shape, factory, work};
  request.store = store_;
  request.incumbent = incumbent;
  const Selection s = calibrate_and_store(request, cls, key_text);
  {
    std::lock_guard lock(mutex_);
    Entry& e = entries_[key];
    e.selection = s;
    e.recalibrate = false;
    epoch_.fetch_add(1, std::memory_order_acq_rel);
  }
  return s;
}

Selection SelectionService::begin(const std::string& key, const std::string& op, const Shape& shape,
                                  const PlanFactory& factory, std::uint64_t work, BackgroundWorker::Job& job) {
  Followed followed = follow_last(op, size_class_of_work(work), factory);
  if (followed.fresh) {
    followed.fresh->shape = shape;
    return *followed.fresh;
  }
  std::optional<Selection> interim = interim_selection(op, shape, factory, followed);
  if (!interim) return find_out(op, shape, factory, work, false, {}, followed.incumbent);
  // The job holds copies of what it needs; the service outlives it (shutdown joins it).
  const std::string incumbent = followed.incumbent;
  job = [this, key, op, shape, factory, work, incumbent] {
    std::optional<Selection> found;
    std::string error;
    bool cancelled = false;
    // Checked between the calibration's steps: the step before may have loaded a driver
    // library, whose exit handlers must not run before the one that stops this thread.
    const auto stop_requested = [this] {
      keep_first_at_exit();
      return worker_.cancelled();
    };
    try {
      found = find_out(op, shape, factory, work, false, {}, incumbent, stop_requested);
    } catch (const Error& e) {
      error = e.what();
      cancelled = worker_.cancelled();
    }
    finish_background(key, std::move(found), error, cancelled);
  };
  stats_.interim.fetch_add(1, std::memory_order_relaxed);
  if (!incumbent.empty()) stats_.rechecks.fetch_add(1, std::memory_order_relaxed);
  log(LogLevel::info, op + " at " + to_string(shape) + ": " + interim->device + " serves while " +
                          (incumbent.empty() ? std::string("the devices are measured")
                                             : "the stored choice is rechecked (" + followed.why_stale + ")") +
                          " in the background");
  return *interim;
}

std::optional<Selection> SelectionService::interim_selection(const std::string& op, const Shape& shape,
                                                             const PlanFactory& factory, const Followed& followed) {
  std::optional<DeviceInfo> ready;
  if (!followed.incumbent.empty()) {
    ready = find_device(followed.incumbent);
  } else {
    // The CPU is ready at once: no context to create, and its kernels need no front-end compile.
    for (const DeviceInfo& d : source_.backend_devices(BackendKind::cpu))
      if (d.type == DeviceType::cpu) {
        ready = d;
        break;
      }
    // Without vgpu's CPU backend (excluded, or a runtime over other backends), a CPU device of
    // another backend serves; finding one needs the full enumeration.
    if (!ready && source_.scope.find(to_string(BackendKind::cpu)) == std::string::npos)
      for (const DeviceInfo& d : source_.devices())
        if (d.type == DeviceType::cpu) {
          ready = d;
          break;
        }
  }
  if (!ready) return std::nullopt;
  try {
    const KernelPlan plan = factory(*ready, shape);
    for (std::size_t i = 0; i < plan.kernel_count(); ++i)
      if (!plan.kernel_source(i).pick(ready->dialects)) return std::nullopt;  // no source it can run
  } catch (const Error&) {
    return std::nullopt;  // it cannot run this shape: the calibration decides in the foreground
  }
  Selection s;
  s.op = op;
  s.shape = shape;
  s.calibration_shape = shape;
  s.size_class = size_class(op, shape);
  s.device = ready->id();
  s.source = SelectionSource::interim;
  s.candidates.push_back(SelectionCandidate{
      s.device, true, 0, 0, false,
      followed.incumbent.empty()
          ? "interim: runs the calls while every device is measured in the background"
          : "interim: the stored choice, rechecked in the background because " + followed.why_stale});
  return s;
}

void SelectionService::finish_background(const std::string& key, std::optional<Selection> found,
                                         const std::string& error, bool cancelled) {
  std::string note;
  {
    std::lock_guard lock(mutex_);
    auto it = entries_.find(key);
    if (it == entries_.end()) return;  // cannot happen: interim entries are never erased
    Selection& current = it->second.selection;
    if (found) {
      if (found->device != current.device) stats_.switches.fetch_add(1, std::memory_order_relaxed);
      current = std::move(*found);
      stats_.finished.fetch_add(1, std::memory_order_relaxed);
      epoch_.fetch_add(1, std::memory_order_acq_rel);  // callers holding the interim device select again
      note = current.op + ": background calibration chose " + current.device;
    } else if (cancelled) {
      stats_.cancelled.fetch_add(1, std::memory_order_relaxed);
    } else {
      // The interim device stays the choice for this process; the next process measures again.
      stats_.failed.fetch_add(1, std::memory_order_relaxed);
      current.source = SelectionSource::fallback;
      if (!current.candidates.empty())
        current.candidates.front().note = "the background calibration failed: " + first_line(error);
      note = "background calibration of '" + current.op + "' failed (" + first_line(error) + "); " + current.device +
             " stays";
    }
  }
  if (!note.empty()) log(found ? LogLevel::info : LogLevel::warn, note);
}

BackgroundStats SelectionService::background_stats() const noexcept {
  BackgroundStats b;
  b.interim = stats_.interim.load(std::memory_order_relaxed);
  b.rechecks = stats_.rechecks.load(std::memory_order_relaxed);
  b.finished = stats_.finished.load(std::memory_order_relaxed);
  b.switches = stats_.switches.load(std::memory_order_relaxed);
  b.failed = stats_.failed.load(std::memory_order_relaxed);
  b.cancelled = stats_.cancelled.load(std::memory_order_relaxed);
  return b;
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
    // An interim selection lists only its ready device; the others are still to be measured.
    other_left = e.selection.source == SelectionSource::interim ||
                 std::any_of(e.selection.candidates.begin(), e.selection.candidates.end(),
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
