// SPDX-License-Identifier: Apache-2.0
// tools/probe/bench_command.cpp — `vgpu-probe bench`: a quick measure of each device.
// Timings are medians of a few runs, each bounded by a time budget so a software device
// (llvmpipe, lavapipe) finishes in seconds; the figures describe this machine, they are never
// compared against limits.
#include "bench_command.hpp"

#include <algorithm>
#include <chrono>
#include <iomanip>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "report.hpp"
#include "vgpu/error.hpp"
#include "vgpu/ops.hpp"
#include "vgpu/persistent_kernel.hpp"
#include "vgpu/runtime.hpp"

namespace vgpu::probe {
namespace {

using Clock = std::chrono::steady_clock;

struct BenchOptions {
  bool json = false, quick = false;
  std::vector<std::string> devices;  // empty: every device
};

struct DeviceBench {
  std::string id, name;
  double round_trip_s = 0;  // steady axpy (n = 1024) persistent call
  double upload_gbps = 0, download_gbps = 0;
  std::uint64_t transfer_bytes = 0;
  std::vector<std::pair<std::uint32_t, double>> matmul_gflops;  // (N, GFLOP/s)
  std::string error;                                            // a vgpu::Error that stopped this device's bench
};

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

/// Runs f up to max_runs times (at least once) until budget seconds pass; returns the median.
template <class F>
double median_time(F&& f, int max_runs, double budget) {
  std::vector<double> t;
  const auto start = Clock::now();
  do {
    const auto t0 = Clock::now();
    f();
    t.push_back(seconds_since(t0));
  } while (static_cast<int>(t.size()) < max_runs && seconds_since(start) < budget);
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

std::vector<float> random_floats(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = u(rng);
  return v;
}

/// One line on stderr saying what runs now (the bench can take seconds per device).
void progress(const std::string& id, std::size_t i, std::size_t n, const std::string& what) {
  std::cerr << "vgpu-probe bench [" << i + 1 << "/" << n << "] " << id << ": " << what << "...\n" << std::flush;
}

DeviceBench bench_device(Runtime& runtime, const DeviceInfo& info, const BenchOptions& o, std::size_t i,
                         std::size_t n) {
  DeviceBench r;
  r.id = info.id();
  r.name = info.name;
  try {
    Device dev = runtime.open(info);
    progress(r.id, i, n, "round trip");
    {
      const std::uint64_t len = 1024;
      PersistentKernel axpy(dev, ops::axpy(info, len));
      const float a = 0.5f;
      auto x = random_floats(len, 1), y = random_floats(len, 2);
      auto call = [&] {
        axpy({TensorArg(&a, {1}), TensorArg(std::as_const(x).data(), {len}), TensorArg(y.data(), {len})});
      };
      call();
      r.round_trip_s = median_time(call, 25, 0.5);
    }
    progress(r.id, i, n, "bandwidth");
    {
      r.transfer_bytes = o.quick ? (4ull << 20) : (64ull << 20);
      std::vector<std::uint8_t> host(r.transfer_bytes, 7);
      Buffer buf = dev.create_buffer(r.transfer_bytes);
      dev.write(buf, host.data(), r.transfer_bytes);  // first touch out of the timing
      dev.synchronize();
      const double up = median_time(
          [&] {
            dev.write(buf, host.data(), r.transfer_bytes);
            dev.synchronize();
          },
          5, 1.0);
      const double down = median_time([&] { dev.read(buf, host.data(), r.transfer_bytes); }, 5, 1.0);
      r.upload_gbps = double(r.transfer_bytes) / up / 1e9;
      r.download_gbps = double(r.transfer_bytes) / down / 1e9;
    }
    for (std::uint32_t size : o.quick ? std::vector<std::uint32_t>{64, 256} : std::vector<std::uint32_t>{256, 1024}) {
      progress(r.id, i, n, "matmul " + std::to_string(size));
      const KernelPlan plan = ops::matmul(dev, size, size, size);
      Kernel k = dev.compile(plan.source, plan.options);
      const std::uint64_t bytes = std::uint64_t(size) * size * 4;
      Buffer A = dev.create_buffer(bytes), B = dev.create_buffer(bytes), C = dev.create_buffer(bytes);
      auto a = random_floats(std::size_t(size) * size, 3);
      dev.write(A, a.data(), bytes);
      dev.write(B, a.data(), bytes);
      BindingSet set = dev.bind(k, {{0, A}, {1, B}, {2, C}});
      const auto& step = plan.steps[0];
      auto run = [&] {
        dev.dispatch(k, set, step.params, step.groups);
        dev.synchronize();
      };
      run();  // warm-up
      const double t = median_time(run, 5, 1.0);
      r.matmul_gflops.emplace_back(size, 2.0 * size * size * double(size) / t / 1e9);
    }
  } catch (const Error& e) {
    r.error = e.what();
  }
  return r;
}

std::string fixed(double v, int digits) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(digits) << v;
  return os.str();
}

int run_bench(const BenchOptions& o) {
  Runtime& runtime = Runtime::global();
  const std::vector<DeviceInfo> devices = filter_devices(runtime.devices(), o.devices);  // bad id: exit 2

  std::vector<DeviceBench> results;
  for (std::size_t i = 0; i < devices.size(); ++i)
    results.push_back(bench_device(runtime, devices[i], o, i, devices.size()));

  if (o.json) {
    nlohmann::ordered_json j = json_document();
    j["version"] = version_string();
    j["quick"] = o.quick;
    j["devices"] = nlohmann::ordered_json::array();
    for (const auto& r : results) {
      nlohmann::ordered_json m = nlohmann::ordered_json::object();
      for (const auto& [size, gf] : r.matmul_gflops) m[std::to_string(size)] = gf;
      j["devices"].push_back({{"id", r.id},
                              {"name", r.name},
                              {"round_trip_seconds", r.round_trip_s},
                              {"transfer_bytes", r.transfer_bytes},
                              {"upload_gb_per_s", r.upload_gbps},
                              {"download_gb_per_s", r.download_gbps},
                              {"matmul_gflops", m},
                              {"error", r.error.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(r.error)}});
    }
    std::cout << json_text(j) << "\n";
  } else {
    std::cout << "Per-device bench (medians; round trip = steady axpy n=1024 persistent call, uploads and "
                 "readback included)\n";
    for (const auto& r : results) {
      std::cout << "  " << std::left << std::setw(10) << r.id << " ";
      if (!r.error.empty()) {
        std::cout << "FAILED: " << r.error << "\n";
        continue;
      }
      std::cout << "round trip " << fixed(r.round_trip_s * 1e6, 1) << " us, upload " << fixed(r.upload_gbps, 2)
                << " GB/s, download " << fixed(r.download_gbps, 2) << " GB/s (" << format_bytes(r.transfer_bytes)
                << ")";
      for (const auto& [size, gf] : r.matmul_gflops)
        std::cout << ", matmul " << size << " " << fixed(gf, 1) << " GFLOP/s";
      std::cout << "  (" << r.name << ")\n";
    }
  }
  const bool failed = std::any_of(results.begin(), results.end(), [](const auto& r) { return !r.error.empty(); });
  return failed ? 1 : 0;
}

}  // namespace

void add_bench_command(CLI::App& app, std::function<int()>& action) {
  auto o = std::make_shared<BenchOptions>();
  CLI::App* cmd = app.add_subcommand(
      "bench",
      "Measure each device: steady round trip, host<->device bandwidth, matmul GFLOP/s at two sizes (exit 1 when a "
      "device fails)");
  cmd->add_flag("--quick", o->quick, "Smaller sizes (4 MiB transfers, matmul 64 and 256) for a run of seconds");
  add_device_option(*cmd, o->devices, "bench only these");
  cmd->add_flag("--json", o->json, "Print one JSON object on stdout (progress stays on stderr)");
  cmd->callback([&action, &app, o] {
    action = [&app, o] {
      o->json = o->json || json_requested(app);
      return run_bench(*o);
    };
  });
}

}  // namespace vgpu::probe
