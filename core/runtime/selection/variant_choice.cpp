// SPDX-License-Identifier: Apache-2.0
// core/runtime/selection/variant_choice.cpp — measured variant choice: the device's table and
// its flights, the strict JSON of the stored entries, and the timing.
#include "variant_choice.hpp"

#include <algorithm>
#include <bit>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>

#include <nlohmann/json.hpp>

#include "background_worker.hpp"
#include "call_data.hpp"
#include "device_core.hpp"
#include "result_check.hpp"
#include "selection_store.hpp"
#include "vgpu/cache/disk_store.hpp"
#include "vgpu/error.hpp"
#include "vgpu/log.hpp"
#include "vgpu/single_flight.hpp"
#include "vgpu/device.hpp"
#include "vgpu/types.hpp"

namespace vgpu::detail {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kRuns = 7;                  // timed runs per candidate (after one warm-up): a median of 7
constexpr double kCandidateBudget = 1.0;  // seconds of timed runs per candidate, at least one run
constexpr double kWarmupSkip = 4.0;       // a warm-up this many times the best so far: not a contender

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }
// The same on the clock a device's measurements read (DeviceCore::timing_clock()).
double seconds_since(const TimingClock& clock, TimingClock::time_point t) {
  return std::chrono::duration<double>(clock.now() - t).count();
}

std::string first_line(const char* what) {
  std::string s(what);
  return s.substr(0, s.find('\n'));
}

std::uint32_t log2_class(std::uint64_t v) { return static_cast<std::uint32_t>(std::bit_width(v - 1)); }

// "MxKxN", with the dtype after it where it is not float32 ("MxKxN float16") and TF32 where
// it is allowed ("MxKxN tf32").
std::string shape_text(const OpShape& s) {
  return std::to_string(s.m) + "x" + std::to_string(s.k) + "x" + std::to_string(s.n) +
         (s.dtype == DType::f32 ? "" : " " + std::string(numpy_name(s.dtype))) + (s.tf32 ? " tf32" : "");
}

std::optional<std::size_t> index_of(const std::vector<OpTuning>& candidates, const std::string& variant) {
  for (std::size_t i = 0; i < candidates.size(); ++i)
    if (candidates[i].variant == variant) return i;
  return std::nullopt;
}

// ---- the disk entry -----------------------------------------------------------------------
struct Measured {
  std::string variant;
  double median_seconds = 0;
  std::string rejected;  // why its result was wrong (then it has no time), else empty
};

std::string to_json(const DeviceInfo& device, const OpShape& shape, const std::string& key_text,
                    const std::string& chosen, const std::vector<Measured>& measured, double seconds) {
  nlohmann::ordered_json j;
  j["v"] = 2;
  j["key"] = key_text;
  j["op"] = std::string(shape.op);
  j["device"] = device.id();
  j["shape"] = {shape.m, shape.k, shape.n};
  j["variant"] = chosen;
  j["measure_ms"] = seconds * 1e3;
  nlohmann::ordered_json all = nlohmann::ordered_json::array();
  for (const Measured& m : measured)
    all.push_back(m.rejected.empty()
                      ? nlohmann::ordered_json{{"variant", m.variant}, {"median_us", m.median_seconds * 1e6}}
                      : nlohmann::ordered_json{{"variant", m.variant}, {"rejected", m.rejected}});
  j["measured"] = all;
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);  // never throws on bytes
}

// The stored variant, or why the entry cannot be trusted (strict: every field has its type,
// the key and device are this one's, the variant is one of today's candidates).
std::optional<std::string> from_json(std::string_view text, const DeviceInfo& device, const OpShape& shape,
                                     const std::string& key_text, const std::vector<OpTuning>& candidates,
                                     std::string& why) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return why = "not a JSON object", std::nullopt;
  auto str = [&](const char* name) -> const std::string* {
    auto it = j.find(name);
    return it != j.end() && it->is_string() ? it->get_ptr<const std::string*>() : nullptr;
  };
  const auto v = j.find("v");
  if (v == j.end() || !v->is_number_integer() || v->get<std::int64_t>() != 2)
    return why = "not version 2", std::nullopt;
  const std::string* key = str("key");
  const std::string* op = str("op");
  const std::string* dev = str("device");
  const std::string* variant = str("variant");
  if (!key || !op || !dev || !variant) return why = "a field is missing or not a string", std::nullopt;
  if (*key != key_text || *op != shape.op || *dev != device.id())
    return why = "it is for another key, op or device", std::nullopt;
  const auto measured = j.find("measured");
  if (measured == j.end() || !measured->is_array()) return why = "\"measured\" is not an array", std::nullopt;
  if (!index_of(candidates, *variant))
    return why = "its variant '" + variant->substr(0, 64) + "' is not a candidate here", std::nullopt;
  return *variant;
}

// Reads the stored choice; a damaged or hostile entry is dropped with one warning.
std::optional<std::string> load(cache::DiskStore& store, const DeviceInfo& device, const OpShape& shape,
                                const std::string& key_text, const std::vector<OpTuning>& candidates) {
  return load_record(
      store, key_text,
      [&](std::string_view text, std::string& why) {
        return from_json(text, device, shape, key_text, candidates, why);
      },
      [&](const std::string& why) {
        return "variant cache: ignoring the stored " + std::string(shape.op) + " variant for " + shape_text(shape) +
               " on " + device.id() + " (" + why + "); measuring again.";
      });
}

// ---- measuring ----------------------------------------------------------------------------
// One candidate's plan made resident on the device: kernels compiled, buffers allocated and
// filled once, every step recorded in one batch. Timed runs submit the batch and wait, so the
// times are the kernels' alone: a PersistentKernel call would add the transfers of A, B and C,
// which at large N dwarf (and would randomise) the differences between tilings.
struct Resident {
  std::vector<Kernel> kernels;
  std::vector<Buffer> buffers;
  Batch batch;
};

Resident make_resident(Device& device, const KernelPlan& plan, const CallData& data) {
  Resident r;
  for (std::size_t i = 0; i < plan.kernel_count(); ++i)
    r.kernels.push_back(device.compile(plan.kernel_source(i), plan.kernel_options(i)));
  std::size_t visible = 0;
  for (const TensorSpec& t : plan.tensors) {
    const std::uint64_t bytes = tensor_bytes(t.shape, t.dtype);
    r.buffers.push_back(DeviceAccess::internal_buffer(device, bytes));
    if (t.scratch) continue;
    if (t.access != Access::write && visible < data.args.size())
      device.write(r.buffers.back(), data.args[visible].in, bytes);
    ++visible;
  }
  r.batch = device.create_batch();
  for (const PlanStep& step : plan.steps) {
    const Kernel& kernel = r.kernels.at(step.kernel);
    std::vector<Binding> bindings;
    for (const auto& [slot, tensor] : step.slot_tensor) bindings.push_back(Binding{slot, r.buffers.at(tensor)});
    r.batch.dispatch(kernel, device.bind(kernel, bindings), step.params, step.groups);
  }
  return r;
}

// Why the outputs of the warm-up run of r (plan p, on inputs) are wrong, or empty: they are read
// back into inputs' output tensors and compared with ref.
std::string wrong_result(Device& device, const KernelPlan& p, Resident& r, CallData& inputs,
                         const check::Reference& ref) {
  std::size_t visible = 0;
  for (std::size_t t = 0; t < p.tensors.size(); ++t) {
    const TensorSpec& spec = p.tensors[t];
    if (spec.scratch) continue;
    if (spec.access != Access::read)
      device.read(r.buffers.at(t), inputs.args.at(visible).out, element_count(spec.shape) * dtype_size(spec.dtype));
    ++visible;
  }
  const check::Outcome o = check::compare(ref, p, inputs);
  return o.ok() ? std::string() : o.describe();
}

// Times every candidate on device; returns the fastest's index, or nothing when all failed or
// computed wrong. Each candidate's warm-up result is checked first (issue 29: a tiling whose
// loops stop early, or that leaves tiles unwritten, is fast and wrong).
std::optional<std::size_t> measure(DeviceCore& core, const OpShape& shape, const std::vector<OpTuning>& candidates,
                                   const CandidatePlan& plan, std::vector<Measured>& measured) {
  Device device = core.handle();
  const TimingClock& clock = core.timing_clock();
  HostDataPool data;                    // one set of random inputs for every candidate (the same tensors)
  std::optional<check::Reference> ref;  // of the op on those inputs, made for the first candidate
  std::string ref_signature;
  std::optional<std::size_t> best;
  double best_s = 0;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    if (BackgroundWorker::stop_requested_here()) return std::nullopt;  // the caller says nothing
    const std::string& name = candidates[i].variant;
    try {
      const KernelPlan p = plan(candidates[i]);
      CallData& inputs = data.pristine(p);
      if (ref_signature.empty()) {
        // TF32 allowed: matmul_tf32's looser bound (its candidates' plans carry that name).
        ref = check::builtin_reference(shape.tf32 ? "matmul_tf32" : std::string(shape.op), p, inputs);
        ref_signature = call_signature(p);
      }
      Resident r = make_resident(device, p, inputs);
      core.counters().variant_measurements.fetch_add(1, std::memory_order_relaxed);
      const auto tw = clock.now();
      device.submit(r.batch);  // warm-up: first-use costs (pipeline, page faults) stay out
      device.synchronize();
      const double warm = seconds_since(clock, tw);
      if (ref && call_signature(p) == ref_signature) {
        if (std::string why = wrong_result(device, p, r, inputs, *ref); !why.empty()) {
          log(LogLevel::warn, "variant " + name + " of " + std::string(shape.op) + " " + shape_text(shape) +
                                  " computed a wrong result on " + core.info().id() + " (" + why + "); never chosen.");
          measured.push_back({name, 0, "wrong result (" + why + ")"});
          continue;
        }
      }
      if (best && warm > kWarmupSkip * best_s) {
        measured.push_back({name, warm, {}});
        continue;
      }
      std::vector<double> times;
      const auto td = clock.now();
      while (static_cast<int>(times.size()) < kRuns) {
        if (BackgroundWorker::stop_requested_here()) return std::nullopt;
        const auto tr = clock.now();
        device.submit(r.batch);
        device.synchronize();
        times.push_back(seconds_since(clock, tr));
        if (seconds_since(clock, td) > kCandidateBudget) break;
      }
      std::sort(times.begin(), times.end());
      const double med = times[times.size() / 2];
      measured.push_back({name, med, {}});
      if (!best || med < best_s) best = i, best_s = med;
    } catch (const Error& e) {
      if (BackgroundWorker::stop_requested_here()) return std::nullopt;  // failing as it stops
      // Never chosen: a variant that fails (compile error, out of memory) is skipped.
      log(LogLevel::warn, "variant " + name + " of " + std::string(shape.op) + " " + shape_text(shape) + " failed on " +
                              core.info().id() + " while measuring: " + first_line(e.what()) + "; skipped.");
    }
  }
  return best;
}

// Finds the choice for key_text outside the table's lock: disk, else measured and stored.
std::optional<std::string> find_out(DeviceCore& core, const DeviceInfo& device, const OpShape& shape,
                                    const std::string& key_text, const std::vector<OpTuning>& candidates,
                                    const CandidatePlan& plan) {
  cache::DiskStore& store = core.l2_store();
  if (auto v = load(store, device, shape, key_text, candidates)) {
    core.counters().variant_loads.fetch_add(1, std::memory_order_relaxed);
    return v;
  }
  const auto t0 = Clock::now();
  std::vector<Measured> measured;
  const std::optional<std::size_t> best = measure(core, shape, candidates, plan, measured);
  const double seconds = seconds_since(t0);
  // A background calibration being stopped (its runtime destroyed, the process exiting): what
  // was measured is dropped unsaid, and the rule's pick serves until a later plan measures.
  if (BackgroundWorker::stop_requested_here()) return std::nullopt;
  if (!best) {
    log(LogLevel::warn, "every variant of " + std::string(shape.op) + " " + shape_text(shape) + " failed on " +
                            device.id() + " while measuring; using the rule's pick " + candidates[0].variant + ".");
    return std::nullopt;
  }
  const std::string& name = candidates[*best].variant;
  store_selection_text(store, key_text, to_json(device, shape, key_text, name, measured, seconds),
                       static_cast<std::uint64_t>(seconds * 1e6));
  log(LogLevel::info, std::string(shape.op) + " " + shape_text(shape) + " on " + device.id() + ": " + name +
                          " (measured " + std::to_string(measured.size()) + " variants in " +
                          std::to_string(static_cast<long long>(seconds * 1e3)) + " ms)");
  return name;
}

}  // namespace

std::string variant_key_text(const DeviceInfo& device, const OpShape& shape, const std::vector<OpTuning>& candidates) {
  // The candidate set is part of the key: shapes of one class may be offered different sets
  // (a grid filter, another rule's pick), and a backend that changes its set measures again,
  // so a sound entry always names one of the candidates it is read for.
  std::vector<std::string> names;
  for (const OpTuning& c : candidates) names.push_back(c.variant);
  std::sort(names.begin(), names.end());
  std::string set;
  for (const std::string& n : names) set += (set.empty() ? "" : "|") + n;
  // v=2: choices whose candidates' results were checked (issue 29); v=1 entries were not, and
  // are never looked up again.
  // A 16-bit dtype's choice is its own (a float32 one keeps the key it always had).
  const std::string dtype = (shape.dtype == DType::f32 ? "" : ";dtype=" + std::string(to_string(shape.dtype))) +
                            (shape.tf32 ? ";precision=tf32" : "");
  return "variant;v=2;op=" + std::string(shape.op) + dtype + ";class=" + std::to_string(log2_class(shape.m)) + "x" +
         std::to_string(log2_class(shape.k)) + "x" + std::to_string(log2_class(shape.n)) + ";candidates=" + set +
         ";devices=" + device.id() + "=" + device.fingerprint.hex() + ",";
}

std::size_t choose_variant(DeviceCore& core, const OpShape& shape, const std::vector<OpTuning>& candidates,
                           const CandidatePlan& plan) {
  if (candidates.size() < 2 || core.tune_mode() == "rules") return 0;
  const DeviceInfo& device = core.info();
  for (std::size_t i = 0; i < candidates.size(); ++i)
    if (candidates[i].variant.empty() || index_of(candidates, candidates[i].variant) != i)
      fail(ErrorCategory::internal,
           "the " + std::string(to_string(device.backend)) + " backend offered " + std::string(shape.op) +
               " candidates without distinct variant names.",
           "report this with the output of vgpu-probe; VGPU_TUNE=rules avoids measuring meanwhile.");
  const std::string key_text = variant_key_text(device, shape, candidates);
  VariantTable& t = core.variant_table();
  std::unique_lock lock(t.mutex);
  for (;;) {
    if (auto it = t.chosen.find(key_text); it != t.chosen.end()) {
      if (auto i = index_of(candidates, it->second)) return *i;
      t.chosen.erase(it);  // cannot happen (the key names the set); find out again
    }
    if (const FlightState state = t.measuring.state(key_text); state != FlightState::none) {
      if (state == FlightState::running_here) return 0;  // re-entered while measuring it
      t.measuring.wait(lock, key_text);
      continue;  // now in the table
    }
    std::optional<std::string> found;
    t.measuring.run(
        lock, key_text,
        [&] {
          try {
            found = find_out(core, device, shape, key_text, candidates, plan);
          } catch (const std::exception& e) {
            // Not a candidate's failure (those are caught per candidate): the store or the
            // device handle; the rule's pick runs, and the next plan tries again.
            if (!BackgroundWorker::stop_requested_here())
              log(LogLevel::warn, "choosing the " + std::string(shape.op) + " variant on " + device.id() +
                                      " failed: " + first_line(e.what()) + "; using the rule's pick.");
          }
        },
        [&](std::monostate*, const std::exception_ptr&) {
          // Nothing found (every candidate failed): the rule's pick for the rest of this
          // process, never stored, so a later process measures again. Cut short by a stop:
          // nothing is kept.
          if (found || !BackgroundWorker::stop_requested_here())
            t.chosen.insert_or_assign(key_text, found ? *found : candidates[0].variant);
        });
    return found ? index_of(candidates, *found).value_or(0) : 0;
  }
}

}  // namespace vgpu::detail
