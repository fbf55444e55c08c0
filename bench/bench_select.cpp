// SPDX-License-Identifier: Apache-2.0
// bench/bench_select.cpp — vgpu-bench-select: does measured device selection pick the fastest
// device, and what does it cost? For op × size (matmul N = 16, 64, 256, 1024, 4096 at {N,N,N};
// axpy n = 1e3, 1e6, 1e8; reduce_sum n = 1e3, 1e7), side by side in one run: the device
// Runtime::explain chose, its steady time, the fastest device's steady time, their ratio
// (target ≤ 1.10), the one-time calibration cost and the cost of the persisted path.
//
// How, per case:
//   1. calibration: a fresh vgpu::Runtime (private VGPU_CACHE_DIR, emptied at start, so nothing
//      is persisted yet; VGPU_DEVICE unset) probes its backends (timed apart), then
//      explain(op, shape) is timed (wall, and Selection::calibration_seconds);
//   2. persisted path: a second fresh Runtime in the same process (same DiskStore) probes its
//      backends, then explain() is timed: it must read the choice back ("persisted");
//   3. independent measurement: on every device the calibration ran at the real shape (runs > 0)
//      plus the chosen one, a PersistentKernel built once per device, one warm-up call, then
//      interleaved rounds (vb::run_interleaved); medians. Devices the calibration excluded
//      (runs == 0: stopped after a warm-up call, or predicted ≥ 4× slower from a probe) are not
//      re-run and are listed with the calibration's note.
// ratio = chosen median / fastest median. A ratio above 1.10 is reported, never an exit failure.
// --quick drops matmul 4096, axpy 1e8 and reduce_sum 1e7 and takes fewer samples.
// --processes P (issue 17: is the choice right in every process?): per case, P fresh processes
// (this program again, each with its own empty cache directory and VGPU_BACKGROUND=0, so each
// calibrates for itself) print the device they chose; step 3 also measures every device a
// process chose, and the table gives how many of the P choices are within 1.10 of the fastest
// (goal: all of them).
//
// Run: build/bin/vgpu-bench-select [--quick] [--json FILE] [--processes P]
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <iostream>

#include "bench_util.hpp"
#include "vgpu/vgpu.hpp"

namespace vb = vgpu::bench;
using vb::Clock;

namespace {

constexpr double kTargetRatio = 1.10;

/// One op at one size.
struct CaseSpec {
  std::string op;
  vgpu::Shape shape;
  std::string size;  ///< as printed: "N=256", "n=1e6"
  bool big = false;  ///< dropped by --quick
};

/// One candidate of a case: what the calibration saw and what the independent run measured.
struct CandResult {
  vgpu::SelectionCandidate cal;
  bool measured = false;
  vb::Stats stats;
};

/// Everything one case produced.
struct CaseResult {
  CaseSpec spec;
  std::string chosen, source;
  double probe_wall = 0;           ///< the calibration runtime's backend probe (not in calibration)
  double calibration_wall = 0;     ///< wall time of the calibrating explain()
  double calibration_seconds = 0;  ///< Selection::calibration_seconds
  std::string persisted_chosen, persisted_source;
  double persisted_probe_wall = 0;
  double persisted_wall = 0;    ///< wall time of the second runtime's explain()
  double persisted_lookup = 0;  ///< its Selection::lookup_seconds
  std::vector<CandResult> cands;
  std::string fastest;
  vb::Stats chosen_stats, fastest_stats;
  double ratio = 0;
  std::vector<std::string> problems;         ///< source or device mismatches
  std::vector<std::string> process_choices;  ///< --processes: each fresh process's choice
  int processes_within = 0;                  ///< of those, choices within kTargetRatio of the fastest
  std::string error;                         ///< a vgpu::Error that ended this case
};

/// Host inputs and outputs for a plan's caller-visible tensors, and the TensorArgs over them.
struct HostData {
  std::vector<std::vector<float>> storage;
  std::vector<vgpu::TensorArg> args;
  std::vector<std::pair<vgpu::Shape, vgpu::Access>> signature;  ///< visible tensors, in order
};

/// Returns the visible (non-scratch) tensors' shapes and access modes of plan.
std::vector<std::pair<vgpu::Shape, vgpu::Access>> signature_of(const vgpu::KernelPlan& plan) {
  std::vector<std::pair<vgpu::Shape, vgpu::Access>> sig;
  for (const auto& t : plan.tensors)
    if (!t.scratch) sig.emplace_back(t.shape, t.access);
  return sig;
}

/// Builds random float32 host data (vb::random_floats) for plan's visible tensors.
HostData make_host_data(const vgpu::KernelPlan& plan, unsigned seed) {
  HostData d;
  d.signature = signature_of(plan);
  for (const auto& t : plan.tensors) {
    if (t.scratch) continue;
    if (t.dtype != vgpu::DType::f32)
      vgpu::fail(vgpu::ErrorCategory::not_supported, "bench-select: tensor '" + t.name + "' is not float32.",
                 "bench only float32 ops.");
    d.storage.push_back(vb::random_floats(vgpu::element_count(t.shape), seed++));
  }
  std::size_t i = 0;
  for (const auto& t : plan.tensors) {
    if (t.scratch) continue;
    float* p = d.storage[i++].data();
    if (t.access == vgpu::Access::read)
      d.args.emplace_back(static_cast<const float*>(p), t.shape);
    else
      d.args.emplace_back(p, t.shape);
  }
  return d;
}

/// Returns the cases: matmul, axpy, reduce_sum at the sizes issue 6 names.
std::vector<CaseSpec> all_cases() {
  std::vector<CaseSpec> c;
  for (std::uint64_t n : {16u, 64u, 256u, 1024u, 4096u})
    c.push_back({"matmul", {n, n, n}, "N=" + std::to_string(n), n == 4096});
  c.push_back({"axpy", {1000}, "n=1e3", false});
  c.push_back({"axpy", {1000000}, "n=1e6", false});
  c.push_back({"axpy", {100000000}, "n=1e8", true});
  c.push_back({"reduce_sum", {1000}, "n=1e3", false});
  c.push_back({"reduce_sum", {10000000}, "n=1e7", true});
  return c;
}

/// Steps 1 and 2: calibrates in a fresh runtime, then reads the choice back in another one.
void calibrate_and_lookup(CaseResult& r) {
  vgpu::Selection cal;
  {
    vgpu::Runtime rt{vgpu::RuntimeOptions{}};
    auto t0 = Clock::now();
    (void)rt.devices();  // backend probe: paid by any use of a fresh runtime, kept apart
    r.probe_wall = vb::seconds_since(t0);
    t0 = Clock::now();
    cal = rt.explain(r.spec.op, r.spec.shape);
    r.calibration_wall = vb::seconds_since(t0);
  }
  r.chosen = cal.device;
  r.source = vgpu::to_string(cal.source);
  r.calibration_seconds = cal.calibration_seconds;
  if (cal.source != vgpu::SelectionSource::calibrated && cal.source != vgpu::SelectionSource::only)
    r.problems.push_back("first explain() came from '" + r.source + "', expected calibrated or only");
  for (const auto& c : cal.candidates) r.cands.push_back(CandResult{c, false, {}});

  vgpu::Runtime rt2{vgpu::RuntimeOptions{}};
  auto t0 = Clock::now();
  (void)rt2.devices();
  r.persisted_probe_wall = vb::seconds_since(t0);
  t0 = Clock::now();
  const vgpu::Selection again = rt2.explain(r.spec.op, r.spec.shape);
  r.persisted_wall = vb::seconds_since(t0);
  r.persisted_lookup = again.lookup_seconds;
  r.persisted_chosen = again.device;
  r.persisted_source = vgpu::to_string(again.source);
  if (again.source != vgpu::SelectionSource::persisted && again.source != vgpu::SelectionSource::only)
    r.problems.push_back("second runtime's explain() came from '" + r.persisted_source + "', expected persisted");
  if (again.device != cal.device)
    r.problems.push_back("second runtime chose " + again.device + ", the calibration " + cal.device);
}

/// Step 3: times the steady call on every device calibrated at the real shape plus the chosen one.
void measure(CaseResult& r, vgpu::Runtime& rt, const vb::Options& o) {
  struct Run {
    std::size_t cand;                            // index into r.cands
    std::unique_ptr<vgpu::PersistentKernel> pk;  // not movable itself
    HostData* data = nullptr;
  };
  std::vector<Run> runs;
  std::vector<std::unique_ptr<HostData>> datas;  // shared by devices whose tensors match
  unsigned seed = 1;
  for (std::size_t i = 0; i < r.cands.size(); ++i) {
    const auto& c = r.cands[i].cal;
    const bool chosen_elsewhere =
        std::find(r.process_choices.begin(), r.process_choices.end(), c.device) != r.process_choices.end();
    if (!(c.eligible && c.runs > 0) && c.device != r.chosen && !chosen_elsewhere) continue;
    vgpu::Device dev = rt.open(c.device);
    vgpu::KernelPlan plan = vgpu::ops::plan(r.spec.op, dev, r.spec.shape);
    const auto sig = signature_of(plan);
    auto it = std::find_if(datas.begin(), datas.end(), [&](const auto& d) { return d->signature == sig; });
    if (it == datas.end()) {
      datas.push_back(std::make_unique<HostData>(make_host_data(plan, seed)));
      seed += 16;
      it = datas.end() - 1;
    }
    runs.push_back(Run{i, std::make_unique<vgpu::PersistentKernel>(dev, std::move(plan)), it->get()});
  }

  // Calls per sample from the calibration's estimate (so a slow device is not called extra
  // times to calibrate), rounds so the case takes about `budget` seconds, 3 at least.
  const double target = o.quick ? 0.002 : 0.01, budget = o.quick ? 0.3 : 2.0;
  const int max_rounds = o.quick ? 7 : 21;
  std::vector<vb::Case> cases;
  double round_cost = 0;
  for (Run& run : runs) {
    const double est = r.cands[run.cand].cal.seconds;
    const std::uint64_t inner =
        est > 0 ? std::max<std::uint64_t>(1, static_cast<std::uint64_t>(std::ceil(target / est))) : 0;
    round_cost += est > 0 ? est * double(inner) : target;
    vgpu::PersistentKernel* pk = run.pk.get();
    HostData* d = run.data;
    cases.push_back(vb::Case{r.cands[run.cand].cal.device, [pk, d] { (*pk)(d->args); }, inner});
  }
  const int rounds = std::clamp(static_cast<int>(budget / std::max(round_cost, 1e-9)), 3, max_rounds);
  const auto stats = vb::run_interleaved(cases, rounds, target);
  for (std::size_t k = 0; k < runs.size(); ++k) {
    CandResult& c = r.cands[runs[k].cand];
    c.measured = true;
    c.stats = stats[k];
    if (r.fastest.empty() || c.stats.median < r.fastest_stats.median) {
      r.fastest = c.cal.device;
      r.fastest_stats = c.stats;
    }
    if (c.cal.device == r.chosen) r.chosen_stats = c.stats;
  }
  r.ratio = r.fastest_stats.median > 0 ? r.chosen_stats.median / r.fastest_stats.median : 0;
  for (const std::string& choice : r.process_choices)
    for (const CandResult& c : r.cands)
      if (c.cal.device == choice && c.measured && r.fastest_stats.median > 0 &&
          c.stats.median / r.fastest_stats.median <= kTargetRatio)
        ++r.processes_within;
}

/// --processes: runs `self --child-choose op dims...` in count fresh processes, each with its
/// own empty cache directory (so each calibrates), and returns their choices ("?" for a failure).
std::vector<std::string> choices_of_fresh_processes(const std::string& self, const CaseSpec& spec, int count) {
  std::vector<std::string> out;
  for (int i = 0; i < count; ++i) {
    const auto dir = std::filesystem::temp_directory_path() /
                     ("vgpu-bench-select-child-" + std::to_string(::getpid()) + "-" + std::to_string(i));
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
    std::string cmd = "env -u VGPU_DEVICE VGPU_BACKGROUND=0 VGPU_CACHE_DIR='" + dir.string() + "' '" + self +
                      "' --child-choose " + spec.op;
    for (auto d : spec.shape) cmd += " " + std::to_string(d);
    cmd += " 2>/dev/null";
    std::string got;
    if (FILE* f = ::popen(cmd.c_str(), "r")) {
      char buf[256];
      while (std::fgets(buf, sizeof buf, f)) got += buf;
      ::pclose(f);
    }
    while (!got.empty() && (got.back() == '\n' || got.back() == ' ')) got.pop_back();
    out.push_back(got.empty() ? "?" : got);
    std::filesystem::remove_all(dir, ec);
  }
  return out;
}

/// Formats how the calibration saw a candidate: its time and runs, or why it was not run.
std::string calibration_text(const vgpu::SelectionCandidate& c) {
  if (!c.eligible) return "not eligible";
  if (c.runs > 0) return vb::fmt_time(c.seconds) + " (" + std::to_string(c.runs) + (c.runs == 1 ? " run)" : " runs)");
  return c.seconds > 0 ? vb::fmt_time(c.seconds) : "-";
}

/// Prints the per-case detail lines: the selection's path and every candidate.
void print_detail(const CaseResult& r) {
  std::cout << r.spec.op << " " << r.spec.size << ": ";
  if (!r.error.empty()) {
    std::cout << "FAILED: " << r.error << "\n";
    return;
  }
  std::cout << "chose " << r.chosen << " [" << r.source << "], calibration " << vb::fmt_time(r.calibration_wall)
            << " wall (calibration_seconds " << vb::fmt_time(r.calibration_seconds) << ", backend probe "
            << vb::fmt_time(r.probe_wall) << " before it); second runtime: " << r.persisted_chosen << " ["
            << r.persisted_source << "] in " << vb::fmt_time(r.persisted_wall) << " (lookup_seconds "
            << vb::fmt_time(r.persisted_lookup) << ", backend probe " << vb::fmt_time(r.persisted_probe_wall)
            << " before it)\n";
  for (const auto& c : r.cands) {
    std::cout << "  " << c.cal.device << ": ";
    if (c.measured) {
      std::cout << "measured " << vb::fmt_stats(c.stats) << ", " << c.stats.samples << "x" << c.stats.inner
                << " calls; calibration " << calibration_text(c.cal);
      if (!c.cal.note.empty()) std::cout << "; " << c.cal.note;
    } else if (!c.cal.eligible) {
      std::cout << "not eligible (calibration: " << c.cal.note << ")";
    } else {
      std::cout << "excluded (calibration: " << (c.cal.note.empty() ? "not run at the real shape" : c.cal.note) << ")";
    }
    if (c.cal.device == r.chosen) std::cout << "  <- chosen";
    if (c.cal.device == r.fastest) std::cout << "  <- fastest";
    std::cout << "\n";
  }
  for (const auto& p : r.problems) std::cout << "  PROBLEM: " << p << "\n";
  if (r.ratio > kTargetRatio)
    std::cout << "  RATIO " << vb::fmt_ratio(r.ratio) << " > " << vb::fmt(kTargetRatio, 2) << ": chose " << r.chosen
              << ", fastest measured " << r.fastest << "\n";
}

/// Returns the case as JSON (same fields as the table and detail lines).
nlohmann::json to_json(const CaseResult& r) {
  nlohmann::json j{{"op", r.spec.op}, {"size", r.spec.size}, {"shape", r.spec.shape}};
  if (!r.error.empty()) {
    j["error"] = r.error;
    return j;
  }
  j.update({{"chosen", r.chosen},
            {"source", r.source},
            {"chosen_time", r.chosen_stats.to_json()},
            {"fastest", r.fastest},
            {"fastest_time", r.fastest_stats.to_json()},
            {"ratio", r.ratio},
            {"ratio_ok", r.ratio <= kTargetRatio},
            {"calibration_wall_s", r.calibration_wall},
            {"calibration_seconds", r.calibration_seconds},
            {"calibration_backend_probe_s", r.probe_wall},
            {"persisted_chosen", r.persisted_chosen},
            {"persisted_source", r.persisted_source},
            {"persisted_lookup_wall_s", r.persisted_wall},
            {"persisted_lookup_seconds", r.persisted_lookup},
            {"persisted_backend_probe_s", r.persisted_probe_wall},
            {"problems", r.problems},
            {"process_choices", r.process_choices},
            {"process_choices_within_target", r.processes_within}});
  for (const auto& c : r.cands) {
    nlohmann::json cj{{"device", c.cal.device},         {"eligible", c.cal.eligible}, {"calibration_s", c.cal.seconds},
                      {"calibration_runs", c.cal.runs}, {"note", c.cal.note},         {"measured", c.measured}};
    if (c.measured) cj["time"] = c.stats.to_json();
    j["candidates"].push_back(cj);
  }
  return j;
}

}  // namespace

int main(int argc, char** argv) {
  // --child-choose op dims...: one fresh process's choice (for --processes), printed alone.
  if (argc >= 4 && std::string(argv[1]) == "--child-choose") {
    try {
      vgpu::Shape shape;
      for (int i = 3; i < argc; ++i) shape.push_back(std::strtoull(argv[i], nullptr, 10));
      vgpu::Runtime rt{vgpu::RuntimeOptions{}};
      std::cout << rt.explain(argv[2], shape).device << "\n";
      return 0;
    } catch (const vgpu::Error& e) {
      std::cerr << e.what() << "\n";
      return 4;
    }
  }
  int processes = 0;
  std::vector<char*> rest;
  for (int i = 0; i < argc; ++i) {
    if (std::string(argv[i]) == "--processes" && i + 1 < argc) {
      processes = std::max(0, std::atoi(argv[++i]));
      continue;
    }
    rest.push_back(argv[i]);
  }
  argc = static_cast<int>(rest.size());
  argv = rest.data();
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  const vb::Options o = vb::parse_args(
      argc, argv, "device selection: chosen vs fastest device per op and size, calibration vs persisted cost");
  // A private, empty cache directory (always: the bench empties it, so never a user's cache),
  // persistence on, and nothing forced: every first explain() must calibrate.
  const auto cache_dir = std::filesystem::temp_directory_path() / ("vgpu-bench-select-" + std::to_string(::getpid()));
  std::error_code ec;
  std::filesystem::remove_all(cache_dir, ec);
  setenv("VGPU_CACHE_DIR", cache_dir.c_str(), 1);
  unsetenv("VGPU_DEVICE");
  unsetenv("VGPU_CACHE_DISABLE");
  nlohmann::json doc{{"machine", vb::print_header("vgpu-bench-select: measured device selection", o)}};
  doc["target_ratio"] = kTargetRatio;
  doc["cache_dir"] = cache_dir.string();

  int failures = 0;
  std::vector<CaseResult> results;
  try {
    vgpu::Runtime measure_rt{vgpu::RuntimeOptions{}};  // opens each device once for step 3
    for (const auto& d : measure_rt.devices()) {
      std::cout << "device " << d.id() << ": " << d.name << " (" << vgpu::to_string(d.type) << ")\n";
      doc["devices"].push_back({{"id", d.id()}, {"name", d.name}, {"type", std::string(vgpu::to_string(d.type))}});
    }
    std::cout << "cache dir (private, emptied): " << cache_dir.string() << "\n\n";
    for (const CaseSpec& spec : all_cases()) {
      if (o.quick && spec.big) continue;
      CaseResult r;
      r.spec = spec;
      std::cout << "running " << spec.op << " " << spec.size << " ..." << std::flush;
      const auto t0 = Clock::now();
      try {
        calibrate_and_lookup(r);
        if (processes > 0) r.process_choices = choices_of_fresh_processes(self, spec, processes);
        measure(r, measure_rt, o);
      } catch (const vgpu::Error& e) {
        r.error = e.what();
        ++failures;
      }
      std::cout << " " << vb::fmt_time(vb::seconds_since(t0)) << "\n" << std::flush;
      results.push_back(std::move(r));
    }
  } catch (const vgpu::Error& e) {
    std::cout << "\nerror: " << e.what() << "\n";
    ++failures;
  }
  std::filesystem::remove_all(cache_dir, ec);

  std::vector<std::string> columns{"op",
                                   "size",
                                   "chosen",
                                   "source",
                                   "chosen time",
                                   "fastest",
                                   "fastest time",
                                   "ratio",
                                   "calibration (one-time)",
                                   "persisted lookup"};
  if (processes > 0) columns.push_back(std::to_string(processes) + " fresh processes within 1.10");
  vb::Table t(columns);
  int ok = 0, total = 0, process_ok = 0, process_total = 0;
  for (const auto& r : results) {
    doc["cases"].push_back(to_json(r));
    if (!r.error.empty()) {
      t.add({r.spec.op, r.spec.size, "FAILED"});
      continue;
    }
    ++total;
    ok += r.ratio <= kTargetRatio;
    std::vector<std::string> row{
        r.spec.op,
        r.spec.size,
        r.chosen,
        r.source,
        vb::fmt_stats(r.chosen_stats),
        r.fastest,
        vb::fmt_stats(r.fastest_stats),
        vb::fmt_ratio(r.ratio) + (r.ratio > kTargetRatio ? " !" : ""),
        vb::fmt_time(r.calibration_wall),
        vb::fmt_time(r.persisted_wall) + (r.persisted_source == "persisted" ? "" : " [" + r.persisted_source + "]")};
    if (processes > 0) {
      std::map<std::string, int> by_device;
      for (const auto& c : r.process_choices) ++by_device[c];
      std::string spread;
      for (const auto& [d, k] : by_device) spread += (spread.empty() ? "" : " ") + d + "x" + std::to_string(k);
      row.push_back(std::to_string(r.processes_within) + "/" + std::to_string(r.process_choices.size()) + " (" +
                    spread + ")");
      process_ok += r.processes_within;
      process_total += static_cast<int>(r.process_choices.size());
    }
    t.add(row);
  }
  std::cout << "\n";
  t.print();
  std::cout << "\n";
  for (const auto& r : results) print_detail(r);
  std::cout << "\n"
            << ok << " of " << total << " cases within ratio " << vb::fmt(kTargetRatio, 2)
            << " of the fastest measured device" << (failures ? " (" + std::to_string(failures) + " failed)" : "")
            << "\n";
  if (processes > 0) {
    std::cout << process_ok << " of " << process_total << " fresh-process choices (" << processes
              << " per case) within ratio " << vb::fmt(kTargetRatio, 2) << " of the fastest measured device\n";
    doc["process_choices_within_target"] = process_ok;
    doc["process_choices_total"] = process_total;
  }
  doc["cases_within_target"] = ok;
  doc["cases_total"] = total;
  doc["failures"] = failures;
  const bool written = vb::finish(doc, o);
  return failures || !written ? 1 : 0;
}
