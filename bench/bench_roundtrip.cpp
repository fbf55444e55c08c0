// SPDX-License-Identifier: Apache-2.0
// bench/bench_roundtrip.cpp — vgpu-bench-roundtrip: the fixed cost of a call, per device, in one
// run (issue 16): a steady N=16 matmul PersistentKernel round trip (upload A, B + dispatch + read C),
// a 256-float multiply round trip (the op whose kernel is trivial, so the figure is the call's
// own cost), an empty-ish write+read of 1 KiB (the pure transfer path), and the batched cost per
// dispatch of 100 axpy (n=1024) — each beside its issue-16 goal, as a ratio (≤ 1.0x meets it).
// Then, on every GPU (software devices skipped: seconds per call), the large N=1024 and N=4096
// matmul round trips, whose goal is torch's CUDA round trip in the same run: bench/python_overhead.py
// part 4 times both side by side (torch is not reachable from C++); here they are printed alone.
// Devices: every device (the CPU included, for scale), or those of VGPU_BENCH_BACKENDS (comma list).
// Results are checked against the host, so a wrong kernel cannot post a figure.
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "bench_util.hpp"
#include "vgpu/vgpu.hpp"

namespace vb = vgpu::bench;

namespace {

// The issue-16 goals in seconds per backend (H200 figures; the software devices have their own
// goals: the seed's moderngl program for GL N=16, 30 µs for the lavapipe multiply).
struct Goals {
  double n16 = 0, mul256 = 0, batched = 0;
};
Goals goals_for(const vgpu::DeviceInfo& info) {
  const bool software = info.type == vgpu::DeviceType::software;
  if (info.backend == vgpu::BackendKind::cuda) return {10e-6, 0, 1.0e-6};
  if (info.backend == vgpu::BackendKind::vulkan)
    return {software ? 0 : 20e-6, software ? 30e-6 : 0, software ? 0 : 1.5e-6};
  if (info.backend == vgpu::BackendKind::opengl) return {software ? 0 : 25e-6, 0, software ? 0 : 3.0e-6};
  return {};
}

std::string vs_goal(double t, double goal) {
  if (goal <= 0) return "-";
  return vb::fmt_ratio(t / goal) + (t <= goal ? " met" : " NOT met");
}

// Throws when got differs from want beyond a float tolerance (a wrong result posts no figure).
void check_close(const std::vector<float>& got, const std::vector<double>& want, const char* what) {
  for (std::size_t i = 0; i < want.size(); ++i)
    if (std::fabs(got[i] - want[i]) > 1e-4 * (1 + std::fabs(want[i])))
      throw std::runtime_error(std::string(what) + ": wrong result at " + std::to_string(i) + " (" +
                               std::to_string(got[i]) + " vs " + std::to_string(want[i]) + ")");
}

}  // namespace

int main(int argc, char** argv) {
  const vb::Options o = vb::parse_args(argc, argv,
                                       "fixed per-call cost per device: N=16 round trip, 256-float "
                                       "multiply round trip, batched per-dispatch cost (issue 16)");
  nlohmann::json doc{{"bench", "vgpu-bench-roundtrip"},
                     {"machine", vb::print_header("vgpu-bench-roundtrip: fixed cost per call, per device", o)}};
  const std::vector<vgpu::BackendKind> wanted = vb::backends_from_env();
  const int rounds = o.quick ? 7 : 21;
  const double target = o.quick ? 0.005 : 0.02;

  vb::Table t({"device", "N=16 matmul trip", "vs goal", "256-float mul trip", "vs goal", "1 KiB write+read",
               "batched per dispatch", "vs goal", "separate per dispatch"});
  vb::Table large({"device", "N=1024 matmul trip", "N=4096 matmul trip"});
  vb::Table on_device({"device", "N=16 matmul trip: host", "its dispatches on the device",
                       "batched axpy: host/dispatch", "on the device/dispatch"});
  bool any_large = false;
  bool failed = false;
  for (const auto& info : vgpu::Runtime::global().devices()) {
    const bool pick = wanted.empty() || std::find(wanted.begin(), wanted.end(), info.backend) != wanted.end();
    if (!pick) continue;
    try {
      vgpu::Device dev = vgpu::Runtime::global().open(info.id());
      // N=16 matmul, checked against a double-precision product.
      const std::uint64_t n = 16;
      auto a = vb::random_floats(n * n, 1), b = vb::random_floats(n * n, 2);
      std::vector<float> c(n * n);
      vgpu::PersistentKernel mm(dev, vgpu::ops::matmul(dev, 16, 16, 16));
      auto f_mm = [&] {
        mm({vgpu::TensorArg(a.data(), {n, n}), vgpu::TensorArg(b.data(), {n, n}), vgpu::TensorArg(c.data(), {n, n})});
      };
      f_mm();
      std::vector<double> want(n * n);
      for (std::uint64_t i = 0; i < n; ++i)
        for (std::uint64_t j = 0; j < n; ++j)
          for (std::uint64_t q = 0; q < n; ++q) want[i * n + j] += double(a[i * n + q]) * b[q * n + j];
      check_close(c, want, "matmul N=16");

      // 256-float multiply.
      const std::uint64_t m = 256;
      auto x = vb::random_floats(m, 3), y = vb::random_floats(m, 4);
      std::vector<float> z(m);
      vgpu::PersistentKernel mul(dev, vgpu::ops::mul(dev.info(), m));
      auto f_mul = [&] {
        mul({vgpu::TensorArg(x.data(), {m}), vgpu::TensorArg(y.data(), {m}), vgpu::TensorArg(z.data(), {m})});
      };
      f_mul();
      std::vector<double> wz(m);
      for (std::uint64_t i = 0; i < m; ++i) wz[i] = double(x[i]) * y[i];
      check_close(z, wz, "mul 256");

      // A bare write + read of 1 KiB: the transfer path without a dispatch.
      vgpu::Buffer tb = dev.create_buffer(1024);
      std::vector<float> tin = vb::random_floats(256, 5), tout(256);
      auto f_xfer = [&] {
        dev.write(tb, tin.data(), 1024);
        dev.read(tb, tout.data(), 1024);
      };

      // 100 axpy dispatches: one recorded batch, one submit, one sync — vs 100 dispatch calls.
      constexpr std::uint64_t kN = 1024;
      vgpu::KernelPlan plan = vgpu::ops::axpy(dev.info(), kN);
      vgpu::Kernel k = dev.compile(plan.source, plan.options);
      const float alpha = 1e-7f;
      vgpu::Buffer ba = dev.create_buffer(4), bx = dev.create_buffer(kN * 4), by = dev.create_buffer(kN * 4);
      dev.write(ba, &alpha, 4);
      dev.write(bx, x.data(), 1024);  // the rest stays zero
      vgpu::BindingSet set = dev.bind(k, {{0, ba}, {1, bx}, {2, by}});
      const auto& step = plan.steps.at(0);
      vgpu::Batch batch = dev.create_batch();
      for (int i = 0; i < 100; ++i) batch.dispatch(k, set, step.params, step.groups);
      auto f_batch = [&] {
        dev.submit(batch);
        dev.synchronize();
      };
      auto f_sep = [&] {
        for (int i = 0; i < 100; ++i) dev.dispatch(k, set, step.params, step.groups);
        dev.synchronize();
      };

      std::vector<vb::Case> cases{
          {"mm16", f_mm}, {"mul256", f_mul}, {"xfer", f_xfer}, {"batch", f_batch}, {"sep", f_sep}};
      const auto st = vb::run_interleaved(cases, rounds, target);
      check_close(c, want, "matmul N=16 (after timing)");
      check_close(z, wz, "mul 256 (after timing)");
      const Goals g = goals_for(info);
      const double per_batch = st[3].median / 100, per_sep = st[4].median / 100;
      t.add({info.id() + " (" + std::string(vgpu::to_string(info.type)) + ")", vb::fmt_stats(st[0]),
             vs_goal(st[0].median, g.n16), vb::fmt_stats(st[1]), vs_goal(st[1].median, g.mul256), vb::fmt_stats(st[2]),
             vb::fmt_time(per_batch), vs_goal(per_batch, g.batched), vb::fmt_time(per_sep)});
      doc["devices"].push_back({{"device", info.id()},
                                {"name", info.name},
                                {"type", std::string(vgpu::to_string(info.type))},
                                {"matmul16_round_trip", st[0].to_json()},
                                {"mul256_round_trip", st[1].to_json()},
                                {"write_read_1k", st[2].to_json()},
                                {"batched_per_dispatch_s", per_batch},
                                {"separate_per_dispatch_s", per_sep},
                                {"goal_matmul16_s", g.n16},
                                {"goal_mul256_s", g.mul256},
                                {"goal_batched_s", g.batched}});
      // The same calls again with the device's own timer on (after the host timing, which the
      // timer writes would disturb): what of a call the device spends running its dispatches.
      if (dev.can_time_dispatches()) {
        dev.set_device_timing(true);
        vgpu::Batch timed = dev.create_batch();  // recorded with timing on (Vulkan writes its timestamps then)
        for (int i = 0; i < 100; ++i) timed.dispatch(k, set, step.params, step.groups);
        const vgpu::CounterSnapshot c0 = dev.counters();
        for (int i = 0; i < rounds; ++i) f_mm();
        const vgpu::CounterSnapshot c1 = dev.counters();
        for (int i = 0; i < rounds; ++i) {
          dev.submit(timed);
          dev.synchronize();
        }
        const vgpu::CounterSnapshot c2 = dev.counters();
        dev.set_device_timing(false);
        const auto per = [](const vgpu::CounterSnapshot& d, double calls) {
          return calls > 0 ? static_cast<double>(d.device_ns) * 1e-9 / calls : 0.0;
        };
        const double mm_device = per(c1 - c0, rounds), axpy_device = per(c2 - c1, 100.0 * rounds);
        on_device.add({info.id(), vb::fmt_time(st[0].median), vb::fmt_time(mm_device), vb::fmt_time(per_batch),
                       vb::fmt_time(axpy_device)});
        doc["devices"].back()["device_timing"] = {{"matmul16_dispatches_s", mm_device},
                                                  {"batched_per_dispatch_s", axpy_device},
                                                  {"timed_dispatches", (c2 - c0).timed_dispatches}};
        check_close(c, want, "matmul N=16 (timed)");
      }
      if (info.type != vgpu::DeviceType::software && info.backend != vgpu::BackendKind::cpu) {
        std::vector<std::string> row{info.id() + " (" + std::string(vgpu::to_string(info.type)) + ")"};
        nlohmann::json large_doc;
        for (const std::uint64_t big : {std::uint64_t{1024}, std::uint64_t{4096}}) {
          auto la = vb::random_floats(big * big, 6), lb = vb::random_floats(big * big, 7);
          std::vector<float> lc(big * big);
          vgpu::PersistentKernel lmm(dev, vgpu::ops::matmul(dev, big, big, big));
          auto f_big = [&] {
            lmm({vgpu::TensorArg(la.data(), {big, big}), vgpu::TensorArg(lb.data(), {big, big}),
                 vgpu::TensorArg(lc.data(), {big, big})});
          };
          std::vector<vb::Case> big_cases{{"big", f_big}};
          const auto bst = vb::run_interleaved(big_cases, o.quick ? 3 : 7, target);
          // 64 entries spread over C against a double-precision dot product (a full check of
          // N=4096 would take longer than the timing).
          std::vector<float> got(64);
          std::vector<double> want_big(64);
          for (std::size_t q = 0; q < 64; ++q) {
            const std::uint64_t i = (q * 2654435761u) % big, j = (q * 40503u + 17) % big;
            for (std::uint64_t p = 0; p < big; ++p) want_big[q] += double(la[i * big + p]) * lb[p * big + j];
            got[q] = lc[i * big + j];
          }
          for (std::size_t q = 0; q < 64; ++q)
            if (std::fabs(got[q] - want_big[q]) > 1e-3 * (1 + std::sqrt(double(big))))
              throw std::runtime_error("matmul N=" + std::to_string(big) + ": wrong result (" + std::to_string(got[q]) +
                                       " vs " + std::to_string(want_big[q]) + ")");
          row.push_back(vb::fmt_stats(bst[0]));
          large_doc["matmul" + std::to_string(big) + "_round_trip"] = bst[0].to_json();
        }
        large.add(row);
        any_large = true;
        doc["devices"].back()["large"] = large_doc;
      }
    } catch (const std::exception& e) {
      std::cout << info.id() << ": FAILED: " << e.what() << "\n";
      doc["failures"].push_back({{"device", info.id()}, {"error", e.what()}});
      failed = true;
    }
  }
  std::cout << "round trips: steady PersistentKernel calls (upload inputs + dispatch + read output); median (min)\n"
               "goals (issue 16): N=16 CUDA 10 us, Vulkan 20 us, OpenGL 25 us (GPUs); 256-float multiply on lavapipe\n"
               "30 us; batched CUDA 1.0, Vulkan 1.5, OpenGL 3 us. llvmpipe's N=16 reference is the seed's moderngl\n"
               "program: bench/python_overhead.py part 3 runs both side by side.\n\n";
  t.print();
  std::cout << "\ndevice time (Device::set_device_timing: the device's own timer, measured in a pass of its own\n"
               "after the host timing above; the rest of a call is submission, transfers and waiting)\n\n";
  on_device.print();
  if (any_large) {
    std::cout << "\nlarge round trips (GPUs; goal: <= torch's CUDA round trip in the same run, which\n"
                 "bench/python_overhead.py part 4 prints beside vgpu's)\n\n";
    large.print();
  }
  if (!vb::finish(doc, o)) return 1;
  return failed ? 1 : 0;
}
