// SPDX-License-Identifier: Apache-2.0
// bench/bench_python_ref.cpp — the C++ side of bench/python_overhead.py: times
// vgpu::Cache::matmul at one N on one device with the loop the Python bench uses (one warm-up
// call, then `samples` samples of `calls` back-to-back calls each, per-call time = sample time /
// calls) and prints one JSON object on stdout. The Python bench runs it in the same run, so the
// "Python − C++" difference compares the same call on the same machine at the same moment.
//
//   vgpu-bench-python-ref --device cpu:0 --n 16 [--samples 15] [--calls 2000]
//   vgpu-bench-python-ref --list      (the devices found, as a JSON list of {id, name, type})
//
// The output array is allocated once (the Python call allocates a new numpy array per call:
// that allocation is part of the overhead the Python bench measures).
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "bench_util.hpp"
#include "vgpu/vgpu.hpp"

namespace {

[[noreturn]] void usage(int code) {
  std::fprintf(code ? stderr : stdout,
               "usage: vgpu-bench-python-ref --device ID --n N [--samples S] [--calls C] | --list\n"
               "  times vgpu::Cache::matmul (N x N, float32) on device ID (e.g. cpu:0) and prints JSON\n");
  std::exit(code);
}

}  // namespace

int main(int argc, char** argv) {
  std::string device_id;
  bool list = false;
  long n = 0, samples = 15, calls = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(2);
      return argv[++i];
    };
    if (a == "--device")
      device_id = value();
    else if (a == "--n")
      n = std::atol(value().c_str());
    else if (a == "--samples")
      samples = std::atol(value().c_str());
    else if (a == "--calls")
      calls = std::atol(value().c_str());
    else if (a == "--list")
      list = true;
    else if (a == "--help" || a == "-h")
      usage(0);
    else
      usage(2);
  }
  if (list) {
    nlohmann::json out = nlohmann::json::array();
    for (const vgpu::DeviceInfo& d : vgpu::Runtime::global().devices())
      out.push_back({{"id", d.id()}, {"name", d.name}, {"type", std::string(vgpu::to_string(d.type))}});
    std::cout << out.dump() << "\n";
    return 0;
  }
  if (device_id.empty() || n <= 0 || samples <= 0 || calls < 0) usage(2);
  try {
    vgpu::Device device = vgpu::Runtime::global().open(device_id);
    vgpu::Cache cache(device);
    const auto un = static_cast<std::uint32_t>(n);
    const std::vector<float> a = vgpu::bench::random_floats(std::size_t{un} * un, 1);
    const std::vector<float> b = vgpu::bench::random_floats(std::size_t{un} * un, 2);
    std::vector<float> c(std::size_t{un} * un);
    auto call = [&] { cache.matmul(a.data(), b.data(), c.data(), un, un, un); };
    const auto t_first = vgpu::bench::Clock::now();
    call();  // the compile (or L2/L3 load): not part of the per-call time
    const double first_s = vgpu::bench::seconds_since(t_first);
    // calls == 0: calibrate to ~20 ms per sample, as the Python side does.
    const std::uint64_t inner = calls > 0 ? static_cast<std::uint64_t>(calls) : vgpu::bench::calibrate(call, 0.02);
    std::vector<double> per_call;
    for (long s = 0; s < samples; ++s) {
      const auto t0 = vgpu::bench::Clock::now();
      for (std::uint64_t k = 0; k < inner; ++k) call();
      per_call.push_back(vgpu::bench::seconds_since(t0) / static_cast<double>(inner));
    }
    const vgpu::bench::Stats st = vgpu::bench::summarize(per_call, inner);
    nlohmann::json out = st.to_json();
    out["device"] = device.info().id();
    out["device_name"] = device.info().name;
    out["device_type"] = std::string(vgpu::to_string(device.info().type));
    out["n"] = n;
    out["first_call_s"] = first_s;
    out["per_call_s"] = per_call;
    out["report"] = cache.report();
    std::cout << out.dump() << "\n";
    return 0;
  } catch (const std::exception& e) {
    nlohmann::json out = {{"error", e.what()}, {"device", device_id}, {"n", n}};
    std::cout << out.dump() << "\n";
    return 1;
  }
}
