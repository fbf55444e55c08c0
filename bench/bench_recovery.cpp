// SPDX-License-Identifier: Apache-2.0
// bench/bench_recovery.cpp — vgpu-bench-recovery: what a device loss costs, per device, side by
// side in one run:
//   recovery  testing::force_device_lost(now), then the first call of a live PersistentKernel
//             (matmul N=64): the call reopens the backend device and rebuilds the kernel (from
//             L1's kept source through L2/L3), its buffers, binding and batch, then runs;
//   cold      a fresh Runtime with the L2 cache off, opening the device, building the same
//             PersistentKernel from source and running it once.
// Each sample's result is checked against a host reference; the recovery's counters are
// printed (l2_hits, source_compiles), so the table shows that recovery compiled nothing from
// source where L2 held the kernel. Mesa's own shader cache (llvmpipe, lavapipe) still serves
// the "cold" case unless MESA_SHADER_CACHE_DISABLE=true is set; the header says which.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "bench_util.hpp"
#include "vgpu/testing.hpp"
#include "vgpu/vgpu.hpp"

namespace {

using namespace vgpu;
namespace vb = vgpu::bench;

constexpr std::uint64_t kN = 64;

struct Data {
  std::vector<float> a = vb::random_floats(kN * kN, 1), b = vb::random_floats(kN * kN, 2), c, ref;
  Data() : c(kN * kN), ref(kN * kN) {
    for (std::uint64_t i = 0; i < kN; ++i)
      for (std::uint64_t j = 0; j < kN; ++j) {
        double s = 0;
        for (std::uint64_t k = 0; k < kN; ++k) s += double(a[i * kN + k]) * b[k * kN + j];
        ref[i * kN + j] = static_cast<float>(s);
      }
  }
  // Runs pk and returns whether every element is within a loose float tolerance of the reference.
  bool run(PersistentKernel& pk) {
    std::fill(c.begin(), c.end(), -1e30f);
    pk({TensorArg(a.data(), {kN, kN}), TensorArg(b.data(), {kN, kN}), TensorArg(c.data(), {kN, kN})});
    for (std::size_t i = 0; i < c.size(); ++i)
      if (std::abs(c[i] - ref[i]) > 1e-3f * (1.0f + std::abs(ref[i]))) return false;
    return true;
  }
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const vb::Options o = vb::parse_args(argc, argv, "device-loss recovery vs a fresh device compiled cold, per device");
  nlohmann::json doc = vb::print_header("vgpu-bench-recovery: loss -> first right result", o);
  const char* mesa = std::getenv("MESA_SHADER_CACHE_DISABLE");
  std::cout << "Mesa shader cache: "
            << (mesa && std::string(mesa) == "true" ? "disabled" : "on (serves 'cold' on Mesa)") << "\nmatmul N=" << kN
            << ", " << (o.quick ? 3 : 9) << " samples per case\n\n";
  const int samples = o.quick ? 3 : 9;
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("vgpu-bench-recovery-" + std::to_string(::getpid()));
  Data data;
  bool all_right = true;
  std::cout
      << "device                                  recovery     cold open+compile  cold/recovery  recovery counters\n";
  for (const DeviceInfo& info : Runtime::global().devices()) {
    RuntimeOptions warm_options;
    warm_options.cache_dir = dir;
    warm_options.forced_device = info.id();
    Runtime warm(warm_options);
    Device device = warm.open(info.id());
    PersistentKernel pk(device, ops::plan("matmul", device, {kN, kN, kN}));
    all_right &= data.run(pk);  // compiled once: the artifact is in L2 (where the backend keeps one)
    std::vector<double> recovery, cold;
    CounterSnapshot over;
    for (int s = 0; s < samples; ++s) {
      const CounterSnapshot before = device.counters();
      testing::force_device_lost(device);
      const auto t0 = vb::Clock::now();
      all_right &= data.run(pk);
      recovery.push_back(vb::seconds_since(t0));
      over = device.counters() - before;

      RuntimeOptions cold_options;
      cold_options.cache_enabled = false;
      const auto t1 = vb::Clock::now();
      {
        Runtime fresh(cold_options);
        Device d = fresh.open(info.id());
        PersistentKernel cold_pk(d, ops::plan("matmul", d, {kN, kN, kN}));
        all_right &= data.run(cold_pk);
        cold.push_back(vb::seconds_since(t1));
      }
    }
    const double r = median(recovery), c = median(cold);
    std::string label = info.id() + " " + info.name;
    label.resize(38, ' ');
    std::cout << label << "  " << vb::fmt_time(r) << "     " << vb::fmt_time(c) << "          "
              << vb::fmt_ratio(r > 0 ? c / r : 0) << "          recoveries=" << over.recoveries
              << " l2_hits=" << over.l2_hits << " l3_hits=" << over.l3_hits
              << " source_compiles=" << over.source_compiles << "\n";
    doc["devices"].push_back({{"device", info.id()},
                              {"name", info.name},
                              {"recovery_s", r},
                              {"cold_s", c},
                              {"ratio", r > 0 ? c / r : 0},
                              {"recovery_counters", over.to_string()}});
  }
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  std::cout << (all_right ? "\nevery result right\n" : "\nWRONG RESULTS\n");
  doc["all_right"] = all_right;
  return vb::finish(doc, o) && all_right ? 0 : 1;
}
