// SPDX-License-Identifier: Apache-2.0
// bench/bench_util.hpp — what every vgpu-bench-* program shares: argument parsing (--quick,
// --json FILE), interleaved timing with min/median, table printing and a machine/load header.
//
// Benchmarks print ratios measured side by side in one run; they never assert wall-clock
// limits. Cases that are compared are sampled round-robin (one sample of each per round) so a
// burst of load from other processes hits all of them alike, and every number is a median.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "vgpu/error.hpp"
#include "vgpu/types.hpp"

namespace vgpu::bench {

using Clock = std::chrono::steady_clock;

/// Returns n floats uniform in [-1, 1) from a fixed seed (the benches' inputs).
inline std::vector<float> random_floats(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

/// Returns the seconds elapsed since t0.
inline double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

/// Per-call times of one benchmark case, in seconds.
struct Stats {
  double min = 0, median = 0, max = 0;
  std::size_t samples = 0;  ///< number of timed samples
  std::uint64_t inner = 1;  ///< calls per sample (each sample's time is divided by it)

  nlohmann::json to_json() const {
    return {{"min_s", min}, {"median_s", median}, {"max_s", max}, {"samples", samples}, {"calls_per_sample", inner}};
  }
};

/// Returns min/median/max of per-call samples (median of an even count: mean of the middle two).
inline Stats summarize(std::vector<double> v, std::uint64_t inner) {
  Stats s;
  s.inner = inner;
  s.samples = v.size();
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.min = v.front();
  s.max = v.back();
  const std::size_t h = v.size() / 2;
  s.median = v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
  return s;
}

/// One thing to time. fn is called inner times per sample; inner == 0 means "calibrate".
struct Case {
  std::string name;
  std::function<void()> fn;
  std::uint64_t inner = 0;
};

/// Returns how many calls of fn make one sample last at least target seconds (1 ... max_inner).
inline std::uint64_t calibrate(const std::function<void()>& fn, double target, std::uint64_t max_inner = 1u << 20) {
  std::uint64_t n = 1;
  for (;;) {
    const auto t0 = Clock::now();
    for (std::uint64_t i = 0; i < n; ++i) fn();
    const double t = seconds_since(t0);
    if (t >= target || n >= max_inner) {
      if (t <= 0) return n;
      // Scale to the target from the last measurement, never below what we just ran.
      const double want = static_cast<double>(n) * target / t;
      return std::clamp<std::uint64_t>(static_cast<std::uint64_t>(want + 0.5), 1, max_inner);
    }
    n *= 2;
  }
}

/// Times every case round-robin: one warm-up call each, calibration of inner (cases with
/// inner == 0) to about target seconds per sample, then `rounds` rounds of one sample per
/// case. Returns per-call stats in case order.
inline std::vector<Stats> run_interleaved(std::vector<Case>& cases, int rounds, double target) {
  for (Case& c : cases) c.fn();  // warm-up: first-touch pages, caches, lazy initialisation
  for (Case& c : cases)
    if (c.inner == 0) c.inner = calibrate(c.fn, target);
  std::vector<std::vector<double>> samples(cases.size());
  for (int r = 0; r < rounds; ++r) {
    for (std::size_t i = 0; i < cases.size(); ++i) {
      Case& c = cases[i];
      const auto t0 = Clock::now();
      for (std::uint64_t k = 0; k < c.inner; ++k) c.fn();
      samples[i].push_back(seconds_since(t0) / static_cast<double>(c.inner));
    }
  }
  std::vector<Stats> out;
  for (std::size_t i = 0; i < cases.size(); ++i) out.push_back(summarize(std::move(samples[i]), cases[i].inner));
  return out;
}

/// Command-line options every bench accepts.
struct Options {
  bool quick = false;     ///< few repeats; finishes in seconds
  std::string json_path;  ///< write results here as JSON when non-empty
};

/// Returns the backends VGPU_BENCH_BACKENDS names (comma list; empty when unset: the bench's
/// default set); a name that is no backend ends the bench with its message (and Fix) and exit code 2.
inline std::vector<vgpu::BackendKind> backends_from_env() {
  std::vector<vgpu::BackendKind> wanted;
  if (const char* v = std::getenv("VGPU_BENCH_BACKENDS")) {
    std::stringstream ss(v);
    std::string item;
    try {
      while (std::getline(ss, item, ','))
        if (!item.empty()) wanted.push_back(vgpu::parse_backend_kind(item));
    } catch (const vgpu::Error& e) {
      std::fprintf(stderr, "VGPU_BENCH_BACKENDS=%s: %s\n", v, e.what());
      std::exit(2);
    }
  }
  return wanted;
}

/// Parses --quick, --json FILE and --help; exits with a usage line on anything else.
inline Options parse_args(int argc, char** argv, std::string_view description) {
  Options o;
  const std::string prog = std::filesystem::path(argv[0]).filename().string();
  auto usage = [&](std::FILE* to) {
    std::fprintf(to,
                 "usage: %s [--quick] [--json FILE]\n  %.*s\n"
                 "  --quick      few repeats (seconds); default mode takes longer and is steadier\n"
                 "  --json FILE  also write the results as JSON to FILE\n",
                 prog.c_str(), static_cast<int>(description.size()), description.data());
  };
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--quick") {
      o.quick = true;
    } else if (a == "--json" && i + 1 < argc) {
      o.json_path = argv[++i];
    } else if (a.rfind("--json=", 0) == 0) {
      o.json_path = std::string(a.substr(7));
    } else if (a == "--help" || a == "-h") {
      usage(stdout);
      std::exit(0);
    } else {
      std::fprintf(stderr, "%s: unknown argument '%s'\n", prog.c_str(), argv[i]);
      usage(stderr);
      std::exit(2);
    }
  }
  return o;
}

/// Formats v with prec digits after the point.
inline std::string fmt(double v, int prec = 1) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(prec) << v;
  return s.str();
}

/// Formats v in scientific notation, e.g. "5.7e-07".
inline std::string fmt_sci(double v, int prec = 1) {
  std::ostringstream s;
  s << std::scientific << std::setprecision(prec) << v;
  return s.str();
}

/// Formats a duration in seconds with a fitting unit (ns, µs, ms, s) and 3 significant digits.
inline std::string fmt_time(double seconds) {
  struct Unit {
    double scale;
    const char* name;
  };
  static constexpr Unit units[] = {{1e-9, "ns"}, {1e-6, "us"}, {1e-3, "ms"}, {1.0, "s"}};
  const Unit* u = &units[0];
  for (const Unit& c : units)
    if (seconds >= c.scale) u = &c;
  const double v = seconds / u->scale;
  const int prec = v >= 100 ? 0 : v >= 10 ? 1 : 2;
  return fmt(v, prec) + " " + u->name;
}

/// Formats "median (min)" of a stats' per-call time.
inline std::string fmt_stats(const Stats& s) { return fmt_time(s.median) + " (" + fmt_time(s.min) + ")"; }

/// Formats a ratio as "12.3x".
inline std::string fmt_ratio(double r) { return fmt(r, r >= 100 ? 0 : r >= 10 ? 1 : 2) + "x"; }

/// A text table with right-aligned columns (first column left-aligned), printed as Markdown
/// so it can be pasted into docs/benchmarks.md unchanged.
class Table {
 public:
  explicit Table(std::vector<std::string> headers) : headers_(std::move(headers)) {}
  /// Appends a row (missing cells print empty).
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  /// Prints the table.
  void print(std::ostream& os = std::cout) const {
    std::vector<std::size_t> w(headers_.size(), 0);
    auto width = [](const std::string& s) {  // count code points, not bytes (µ, ×)
      std::size_t n = 0;
      for (unsigned char c : s) n += (c & 0xC0) != 0x80;
      return n;
    };
    for (std::size_t i = 0; i < headers_.size(); ++i) w[i] = std::max<std::size_t>(3, width(headers_[i]));
    for (const auto& r : rows_)
      for (std::size_t i = 0; i < r.size() && i < w.size(); ++i) w[i] = std::max(w[i], width(r[i]));
    auto line = [&](const std::vector<std::string>& r) {
      os << '|';
      for (std::size_t i = 0; i < w.size(); ++i) {
        const std::string cell = i < r.size() ? r[i] : "";
        const std::string pad(w[i] - width(cell), ' ');
        os << ' ' << (i == 0 ? cell + pad : pad + cell) << " |";
      }
      os << '\n';
    };
    line(headers_);
    // Markdown alignment row: ":---" left for the first column, "---:" right for the others.
    os << '|';
    for (std::size_t i = 0; i < w.size(); ++i) {
      const std::string dashes(w[i] + 1, '-');
      os << (i == 0 ? ":" + dashes : dashes + ":") << '|';
    }
    os << '\n';
    for (const auto& r : rows_) line(r);
  }

 private:
  std::vector<std::string> headers_;
  std::vector<std::vector<std::string>> rows_;
};

/// Returns the CPU's model name from /proc/cpuinfo (or "unknown").
inline std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(" \t", colon + 1));
    }
  }
  return "unknown";
}

/// Returns the 1/5/15-minute load averages as "0.52 0.40 0.31".
inline std::string load_average() {
  double l[3] = {0, 0, 0};
  if (getloadavg(l, 3) != 3) return "unknown";
  return fmt(l[0], 2) + " " + fmt(l[1], 2) + " " + fmt(l[2], 2);
}

/// Returns how many compiler/build processes (cc1plus, ninja, make, ld) are running now —
/// a hint that the numbers compete with someone's build.
inline int busy_build_processes() {
  int n = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string pid = e.path().filename().string();
    if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream comm(e.path() / "comm");
    std::string name;
    if (!std::getline(comm, name)) continue;
    if (name == "cc1plus" || name == "cc1" || name == "ninja" || name == "make" || name == "ld" || name == "ld.gold" ||
        name == "collect2")
      ++n;
  }
  return n;
}

/// Returns the local date and time as "2026-11-30 10:15".
inline std::string now_string() {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M", std::localtime(&t));
  return buf;
}

/// Prints the machine and load header and returns it as JSON.
inline nlohmann::json print_header(std::string_view title, const Options& o) {
  const unsigned cores = std::thread::hardware_concurrency();
  const std::string load = load_average();
  const int builds = busy_build_processes();
  std::cout << "# " << title << (o.quick ? "  (--quick)" : "") << "\n"
            << "machine: " << cpu_model() << ", " << cores << " hardware threads\n"
            << "date: " << now_string() << "   load average (1/5/15 min) at start: " << load << "\n";
  if (builds > 0)
    std::cout << "warning: " << builds
              << " build processes are running; absolute times are inflated, ratios less so.\n";
  std::cout << "timing: medians over interleaved samples, shown as median (min)\n\n";
  return {{"title", title},
          {"quick", o.quick},
          {"cpu_model", cpu_model()},
          {"hardware_threads", cores},
          {"date", now_string()},
          {"load_average_start", load},
          {"build_processes_at_start", builds}};
}

/// Prints the closing load line, adds it to doc["machine"], and writes doc to o.json_path if set.
/// Returns false when the JSON file could not be written.
inline bool finish(nlohmann::json& doc, const Options& o) {
  const std::string load = load_average();
  std::cout << "\nload average (1/5/15 min) at end: " << load << "\n";
  doc["machine"]["load_average_end"] = load;
  if (o.json_path.empty()) return true;
  std::ofstream out(o.json_path);
  out << doc.dump(2) << '\n';
  if (!out) {
    std::cerr << "error: could not write " << o.json_path << "\n";
    return false;
  }
  std::cout << "results written to " << o.json_path << "\n";
  return true;
}

}  // namespace vgpu::bench
