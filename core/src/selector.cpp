// core/src/selector.cpp — measured device selection: calibration, lookup, demotion.
#include "selector.hpp"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <limits>
#include <memory>

#include "selection_store.hpp"
#include "vgpu/error.hpp"
#include "vgpu/log.hpp"
#include "vgpu/ops.hpp"
#include "vgpu/persistent_kernel.hpp"
#include "vgpu/runtime.hpp"

namespace vgpu::detail {
namespace {

using Clock = std::chrono::steady_clock;

// Calibration bounds. A device whose warm-up call is kWarmupSkip× (or whose first timed call
// is kRunSkip×) slower than the best so far stops there; a device runs at most kRuns timed
// calls and stops early once its calls took kDeviceBudget seconds. Problems with more work
// than kProbeWork[op] are first timed at a probe shape with about that much work, and a device
// whose probe, scaled linearly to the real work, predicts more than kPredictSkip× the best
// real time — and more than kRunCheap seconds, so that an overhead-bound probe scaled up
// linearly cannot exclude a GPU that is merely slow at small sizes — is never run at the real
// size (a 4096² matmul on llvmpipe would take minutes).
constexpr double kWarmupSkip = 50, kRunSkip = 4, kPredictSkip = 4;
constexpr int kRuns = 3;
constexpr double kDeviceBudget = 0.25;
// Devices whose times are within kCloseFactor of the best get up to kRefineRounds more calls
// each, round-robin, within kRefineBudget seconds.
constexpr double kCloseFactor = 1.3;
constexpr int kRefineRounds = 8;
constexpr double kRefineBudget = 0.5;
constexpr double kRunCheap = 0.5;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::uint64_t probe_work(const std::string& op) { return op == "matmul" ? (1ull << 24) : (1ull << 20); }

// Devices likely to win are timed first, so the skip rules have a good "best" early.
int prior_rank(const DeviceInfo& d) {
  switch (d.type) {
    case DeviceType::discrete_gpu: return 0;
    case DeviceType::integrated_gpu: return 1;
    case DeviceType::cpu: return 2;
    case DeviceType::virtual_gpu: return 3;
    case DeviceType::other: return 4;
    case DeviceType::software: return 5;
  }
  return 6;
}

// Host data for a plan's caller-visible tensors, random in [-1, 1) (fixed seed), and the
// TensorArgs pointing at it.
struct CallData {
  std::vector<std::vector<std::uint32_t>> storage;  // 4-byte elements of any dtype
  std::vector<TensorArg> args;
};

CallData make_call_data(const KernelPlan& plan) {
  CallData d;
  // xorshift64: filling 10^8 elements must take well under a second (mt19937 + a distribution
  // took seconds), and any spread of values in [-1, 1) times a kernel the same.
  std::uint64_t state = 0x9E3779B97F4A7C15ull;
  for (const TensorSpec& t : plan.tensors) {
    if (t.scratch) continue;
    auto& v = d.storage.emplace_back(element_count(t.shape));
    for (auto& x : v) {
      state ^= state << 13;
      state ^= state >> 7;
      state ^= state << 17;
      const float f = static_cast<float>(static_cast<std::int64_t>(state >> 40) - (1 << 23)) * (1.0f / (1 << 23));
      x = t.dtype == DType::f32 ? std::bit_cast<std::uint32_t>(f) : static_cast<std::uint32_t>(state >> 57);
    }
  }
  std::size_t i = 0;
  for (const TensorSpec& t : plan.tensors) {
    if (t.scratch) continue;
    void* p = d.storage[i++].data();
    const bool in_only = t.access == Access::read;
    switch (t.dtype) {
      case DType::f32:
        d.args.push_back(in_only ? TensorArg(static_cast<const float*>(p), t.shape) : TensorArg(static_cast<float*>(p), t.shape));
        break;
      case DType::i32:
        d.args.push_back(in_only ? TensorArg(static_cast<const std::int32_t*>(p), t.shape)
                                 : TensorArg(static_cast<std::int32_t*>(p), t.shape));
        break;
      case DType::u32:
        d.args.push_back(in_only ? TensorArg(static_cast<const std::uint32_t*>(p), t.shape)
                                 : TensorArg(static_cast<std::uint32_t*>(p), t.shape));
        break;
    }
  }
  return d;
}

// Whether source has the dialect d's backend compiles (a plan without it can never run there).
bool has_dialect(const KernelSource& source, const DeviceInfo& d) {
  switch (d.backend) {
    case BackendKind::cuda: return !source.cuda.empty() && !source.cuda_entry.empty();
    case BackendKind::vulkan:
    case BackendKind::opengl: return !source.glsl.empty();
    default: return static_cast<bool>(source.cpu);
  }
}

// Why plan cannot run on d (memory), or empty.
std::string memory_problem(const DeviceInfo& d, const KernelPlan& plan) {
  std::uint64_t total = 0;
  for (const TensorSpec& t : plan.tensors) {
    const std::uint64_t bytes = element_count(t.shape) * 4;
    if (d.limits.max_buffer_bytes && bytes > d.limits.max_buffer_bytes)
      return "tensor '" + t.name + "' needs " + std::to_string(bytes) + " bytes, over the device's buffer limit";
    total += bytes;
  }
  // Leave a fifth of the memory to everything else on the device.
  if (d.memory_bytes && total > d.memory_bytes / 5 * 4)
    return "needs " + std::to_string(total) + " bytes, more than the device's memory allows";
  return {};
}

// The shape with about probe_work(op) work and shape's proportions (every dim scaled alike).
Shape probe_shape(const std::string& op, const Shape& shape) {
  const double scale =
      std::pow(double(probe_work(op)) / double(selection_work(op, shape)), 1.0 / double(shape.size()));
  Shape p = shape;
  for (auto& d : p) d = std::max<std::uint64_t>(1, static_cast<std::uint64_t>(std::llround(double(d) * scale)));
  return p;
}

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

// Why a selection read from disk does not belong to op's size_class on devices (empty when it
// does): another op or class, a device that is not among them, or a choice that is not its
// first eligible candidate.
std::string persisted_problem(const Selection& s, const std::string& op, std::uint32_t size_class,
                              const std::vector<DeviceInfo>& devices) {
  if (s.op != op || s.size_class != size_class)
    return "it is for '" + s.op + "' class " + std::to_string(s.size_class) + ", not '" + op + "' class " +
           std::to_string(size_class);
  for (const SelectionCandidate& c : s.candidates)
    if (std::none_of(devices.begin(), devices.end(), [&](const DeviceInfo& d) { return d.id() == c.device; }))
      return "it names device '" + c.device + "', which is not present";
  const auto first = std::find_if(s.candidates.begin(), s.candidates.end(), [](auto& c) { return c.eligible; });
  if (first == s.candidates.end() || first->device != s.device)
    return "its choice '" + s.device + "' is not its first eligible candidate";
  return {};
}

std::string fmt_ratio(double r) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0fx", r);
  return buf;
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

Selection Selector::calibrate(const std::string& op, const Shape& shape, const PlanFactory& factory,
                              const std::set<std::string>& demoted) {
  const auto t0 = Clock::now();
  Selection s;
  s.op = op;
  s.shape = shape;
  s.calibration_shape = shape;
  const std::uint64_t work = selection_work(op, shape);
  s.size_class = static_cast<std::uint32_t>(std::bit_width(work - 1));

  struct Cand {
    DeviceInfo info;
    KernelPlan plan;
    SelectionCandidate c;
    std::unique_ptr<PersistentKernel> kernel;  // kept while it may still be a close contender
    std::vector<double> times;                 // timed calls at the real shape
  };
  std::vector<Cand> cands;
  std::vector<SelectionCandidate> ineligible, skipped;
  for (const DeviceInfo& d : runtime_.devices()) {
    SelectionCandidate c;
    c.device = d.id();
    if (demoted.contains(c.device)) {
      skipped.push_back(SelectionCandidate{c.device, true, 0, 0, true, "demoted: failed for this op"});
      continue;
    }
    try {
      KernelPlan plan = factory(d, shape);
      if (!has_dialect(plan.source, d)) {
        c.note = "the kernel has no source in " + std::string(to_string(d.backend)) + "'s dialect";
        ineligible.push_back(c);
        continue;
      }
      if (std::string why = memory_problem(d, plan); !why.empty()) {
        c.note = why;
        ineligible.push_back(c);
        continue;
      }
      c.eligible = true;
      cands.push_back(Cand{d, std::move(plan), c, nullptr, {}});
    } catch (const Error& e) {
      // The shape's form was checked by selection_work(); what a factory rejects now is this
      // device (limits, dialect). If every device rejects it, the error below lists them all.
      c.note = first_line(e.what());
      ineligible.push_back(c);
    }
  }
  if (cands.empty()) {
    std::string why;
    for (const auto& c : ineligible) why += "\n  " + c.device + ": " + c.note;
    if (ineligible.empty())  // no device at all: say why each backend has none
      for (const BackendStatus& b : runtime_.backends())
        why += "\n  " + std::string(to_string(b.kind)) + ": " + (b.available ? "no device" : b.reason);
    fail(ErrorCategory::unavailable, "no device can run '" + op + "' at " + to_string(shape) + ":" + why,
         "check VGPU_BACKEND / VGPU_DEVICE, or run vgpu-probe to see which devices are available.");
  }
  if (cands.size() == 1) {
    // Nothing to compare: timing it would only cost (seconds, for a big problem).
    cands[0].c.note = "the only eligible device; not timed";
    s.candidates.push_back(cands[0].c);
    s.candidates.insert(s.candidates.end(), ineligible.begin(), ineligible.end());
    s.device = cands[0].c.device;
    s.source = SelectionSource::only;
    s.calibration_seconds = seconds_since(t0);
    return s;
  }
  std::stable_sort(cands.begin(), cands.end(),
                   [](const Cand& a, const Cand& b) { return prior_rank(a.info) < prior_rank(b.info); });

  // Devices share the host data when their plans take the same tensors (the built-ins do).
  std::vector<std::pair<std::string, std::unique_ptr<CallData>>> host_data;
  auto data_for = [&](const KernelPlan& plan) -> CallData& {
    std::string sig;
    for (const TensorSpec& t : plan.tensors)
      if (!t.scratch)
        sig += std::to_string(static_cast<int>(t.dtype)) + to_string(t.shape) +
               std::to_string(static_cast<int>(t.access)) + ";";
    for (auto& [s2, d] : host_data)
      if (s2 == sig) return *d;
    return *host_data.emplace_back(sig, std::make_unique<CallData>(make_call_data(plan))).second;
  };
  double best = std::numeric_limits<double>::infinity();
  const bool probe = cands.size() > 1 && work > probe_work(op);
  const Shape pshape = probe ? probe_shape(op, shape) : Shape{};
  for (Cand& cand : cands) {
    SelectionCandidate& c = cand.c;
    try {
      Device dev = runtime_.open(cand.info);
      if (probe && std::isfinite(best)) {
        // Time the probe shape first; never run the real size on a device it shows hopeless.
        KernelPlan pplan = factory(cand.info, pshape);
        PersistentKernel pk(dev, pplan);
        CallData& data = data_for(pplan);
        pk(data.args);  // warm-up
        const auto tp = Clock::now();
        pk(data.args);
        const double predicted = seconds_since(tp) * double(work) / double(selection_work(op, pshape));
        if (predicted > kPredictSkip * best && predicted > kRunCheap) {
          c.seconds = predicted;
          c.note = "predicted from a probe at " + to_string(pshape) + ": " + fmt_ratio(predicted / best) +
                   " the best; not run at the real size";
          continue;
        }
      }
      cand.kernel = std::make_unique<PersistentKernel>(dev, cand.plan);
      PersistentKernel& pk = *cand.kernel;
      CallData& data = data_for(cand.plan);
      auto tw = Clock::now();
      pk(data.args);  // warm-up: first-use costs (page faults, lazy pipeline work) stay out
      const double warm = seconds_since(tw);
      if (warm > kWarmupSkip * best) {
        c.seconds = warm;
        c.note = "warm-up call " + fmt_ratio(warm / best) + " the best; stopped";
        cand.kernel.reset();
        continue;
      }
      std::vector<double>& times = cand.times;
      const auto td = Clock::now();
      while (static_cast<int>(times.size()) < kRuns) {
        const auto tr = Clock::now();
        pk(data.args);
        times.push_back(seconds_since(tr));
        if (times.size() == 1 && times[0] > kRunSkip * best) {
          c.note = "first run " + fmt_ratio(times[0] / best) + " the best; stopped";
          break;
        }
        if (seconds_since(td) > kDeviceBudget) break;
      }
      c.seconds = median(times);
      c.runs = static_cast<int>(times.size());
      best = std::min(best, c.seconds);
      // Only close contenders are refined below: free the others' buffers now (several
      // devices may share host memory).
      for (Cand& other : cands)
        if (other.kernel && other.c.seconds > kCloseFactor * best) other.kernel.reset();
    } catch (const Error& e) {
      // Failing while calibrating is failing for this op: never chosen in this process.
      cand.kernel.reset();
      c.eligible = false;
      c.note = "failed: " + first_line(e.what());
      log(LogLevel::warn, c.device + " failed while calibrating '" + op + "': " + first_line(e.what()));
    }
  }

  // Devices within kCloseFactor of the best were timed one after the other, a few calls each:
  // machine drift between them can decide the order. Time them again round-robin (one call
  // each per round, so drift hits all alike) and decide on all samples.
  std::vector<Cand*> close;
  for (Cand& cand : cands)
    if (cand.kernel && cand.c.runs > 0 && cand.c.seconds <= kCloseFactor * best) close.push_back(&cand);
  if (close.size() > 1) {
    const auto tr = Clock::now();
    for (int round = 0; round < kRefineRounds && seconds_since(tr) < kRefineBudget; ++round)
      for (Cand* cand : close) {
        CallData& data = data_for(cand->plan);
        const auto t = Clock::now();
        (*cand->kernel)(data.args);
        cand->times.push_back(seconds_since(t));
      }
    for (Cand* cand : close) {
      cand->c.seconds = median(cand->times);
      cand->c.runs = static_cast<int>(cand->times.size());
      cand->c.note = "close to the best: timed again round-robin";
    }
  }
  for (Cand& cand : cands) cand.kernel.reset();

  // Measured candidates by time, then predicted ones, then those that failed or cannot run.
  for (Cand& cand : cands) s.candidates.push_back(cand.c);
  s.candidates.insert(s.candidates.end(), ineligible.begin(), ineligible.end());
  auto rank = [](const SelectionCandidate& c) { return !c.eligible ? 2 : c.runs > 0 ? 0 : 1; };
  std::stable_sort(s.candidates.begin(), s.candidates.end(), [&](const auto& a, const auto& b) {
    return rank(a) != rank(b) ? rank(a) < rank(b) : a.seconds < b.seconds;
  });
  if (!s.candidates.front().eligible) {
    std::string why;
    for (const auto& c : s.candidates) why += "\n  " + c.device + ": " + c.note;
    fail(ErrorCategory::unavailable, "every device failed to run '" + op + "' at " + to_string(shape) + ":" + why,
         "check the devices with vgpu-probe (its self-test runs every op), or force one with VGPU_DEVICE.");
  }
  s.device = s.candidates.front().device;
  s.candidates.insert(s.candidates.end(), skipped.begin(), skipped.end());
  const auto eligible = std::count_if(s.candidates.begin(), s.candidates.end(), [](auto& c) { return c.eligible; });
  s.source = eligible == 1 ? SelectionSource::only : SelectionSource::calibrated;
  s.calibration_seconds = seconds_since(t0);
  return s;
}

Selector::Entry& Selector::entry_locked(const std::string& key, const std::string& op, const Shape& shape,
                                        const PlanFactory& factory) {
  if (auto it = entries_.find(key); it != entries_.end()) return it->second;
  const std::uint64_t work = selection_work(op, shape);
  const auto size_class = static_cast<std::uint32_t>(std::bit_width(work - 1));
  const std::vector<DeviceInfo> devices = runtime_.devices();
  const std::string key_text = selection_key_text(op, size_class, devices);
  if (auto loaded = load_selection(key_text)) {
    // The key holds every device's id and fingerprint, so a sound entry names only devices of
    // this set; one naming another (written so by hand, a tool or another build) is dropped
    // and calibrated over, never followed to a device that is not there.
    if (std::string why = persisted_problem(*loaded, op, size_class, devices); !why.empty()) {
      drop_selection(key_text, why);
    } else {
      loaded->shape = shape;
      return entries_[key] = Entry{*loaded, {}};
    }
  }
  Selection s = calibrate(op, shape, factory);
  // A device that failed may only have failed this once (out of memory, say): keep such a
  // choice to this process, so the next one measures again.
  const bool failures = std::any_of(s.candidates.begin(), s.candidates.end(),
                                    [](const SelectionCandidate& c) { return c.note.starts_with("failed: "); });
  if (s.source == SelectionSource::calibrated && !failures) store_selection(key_text, s);
  log(LogLevel::info, op + " at " + to_string(shape) + " → " + s.device + " (calibrated in " +
                          std::to_string(static_cast<int>(s.calibration_seconds * 1000)) + " ms)");
  return entries_[key] = Entry{std::move(s), {}};
}

Selection Selector::explain(const std::string& op, const Shape& shape, const PlanFactory& given) {
  const auto t0 = Clock::now();
  const std::uint64_t work = selection_work(op, shape);  // validates op and shape first
  PlanFactory factory = given;
  if (!factory) {
    ops::check_shape(op, shape);  // with no factory, op must be a built-in
    factory = [op](const DeviceInfo& d, const Shape& sh) { return ops::plan(op, d, sh); };
  }
  if (!forced_.empty()) {
    Selection s;
    s.op = op;
    s.shape = shape;
    s.size_class = static_cast<std::uint32_t>(std::bit_width(work - 1));
    s.device = runtime_.open(forced_).info().id();
    s.source = SelectionSource::forced;
    s.candidates.push_back(SelectionCandidate{s.device, true, 0, 0, false, "forced by VGPU_DEVICE"});
    s.lookup_seconds = seconds_since(t0);
    return s;
  }
  const std::string key = op + "#" + std::to_string(std::bit_width(work - 1));
  std::lock_guard lock(mutex_);
  Entry& e = entry_locked(key, op, shape, factory);
  if (e.recalibrate) {
    // The order of the others came from a calibration that may have stopped them after one
    // noisy warm-up against the now demoted device: measure them again, without it.
    e.recalibrate = false;
    e.selection = calibrate(op, shape, factory, e.demoted);
    e.selection.source = SelectionSource::fallback;
  }
  Selection s = e.selection;
  s.shape = shape;
  bool fell_back = false;
  for (auto& c : s.candidates) {
    c.demoted = e.demoted.contains(c.device);
    if (c.demoted) c.note = "demoted: failed for this op";
  }
  auto usable = std::find_if(s.candidates.begin(), s.candidates.end(), [](auto& c) { return c.eligible && !c.demoted; });
  if (usable == s.candidates.end())
    fail(ErrorCategory::unavailable, "every device that can run '" + op + "' at " + to_string(shape) + " failed for it.",
         "see the log for each device's error; check the devices with vgpu-probe.");
  fell_back = usable->device != s.device;
  s.device = usable->device;
  if (fell_back) s.source = SelectionSource::fallback;
  s.lookup_seconds = seconds_since(t0);
  return s;
}

bool Selector::demote(const std::string& op, const Shape& shape, const std::string& device_id,
                      const std::string& reason) {
  const std::uint64_t work = selection_work(op, shape);
  const std::string key = op + "#" + std::to_string(std::bit_width(work - 1));
  std::lock_guard lock(mutex_);
  auto it = entries_.find(key);
  if (it == entries_.end()) return false;
  Entry& e = it->second;
  e.demoted.insert(device_id);
  epoch_.fetch_add(1, std::memory_order_acq_rel);
  for (const auto& c : e.selection.candidates) {
    if (!c.eligible || e.demoted.contains(c.device)) continue;
    e.recalibrate = true;
    log(LogLevel::warn, device_id + " failed for '" + op + "' (" + first_line(reason) +
                            "); the other devices are measured again for this size class.");
    return true;
  }
  log(LogLevel::warn, device_id + " failed for '" + op + "' (" + first_line(reason) + "); no other device is left for it.");
  return false;
}

}  // namespace vgpu::detail
