// SPDX-License-Identifier: Apache-2.0
// bench/bench_arrays.cpp — a chain of 10 dependent N×N matmuls per device, three ways, sampled
// round-robin in one run (issue 31):
//   arrays:      X = matmul(X, B) ten times on vgpu::Arrays, then one synchronize (no host traffic);
//   device-only: the same ten launches recorded in one Batch over two buffers, one submit and
//                one synchronize — the kernels' own time, the floor the arrays chain is judged by
//                (goal: arrays ≤ 1.1× device-only);
//   host arrays: ten Cache::matmul calls feeding each result back (a round trip per matmul).
// N = 1024 on hardware devices and the CPU, 256 on software GPUs (llvmpipe, lavapipe: seconds
// per 1024² matmul); --quick: 128 everywhere. Results are checked: the arrays chain against the
// host chain. VGPU_BENCH_BACKENDS=cuda,vulkan limits the devices.
// A second table times a stack of 64 products of 128×128 matrices (numpy's (64,128,128) @
// (64,128,128)): the batched kernel's one launch against 64 matmuls of separate 2-D arrays in
// one submission each, what the stack cost before it (checked against each other).
#include <cmath>
#include <iostream>

#include "bench_util.hpp"
#include "vgpu/vgpu.hpp"

namespace vb = vgpu::bench;

int main(int argc, char** argv) {
  const vb::Options o = vb::parse_args(argc, argv, "a chain of 10 dependent matmuls: arrays vs kernels vs host arrays");
  const std::vector<vgpu::BackendKind> wanted = vb::backends_from_env();
  const int rounds = o.quick ? 5 : 11;
  const double target = o.quick ? 0.01 : 0.05;
  constexpr int kChain = 10;
  nlohmann::json doc{{"bench", "arrays"},
                     {"machine", vb::print_header("vgpu-bench-arrays: a chain of 10 dependent matmuls per device", o)}};
  vb::Table t({"device", "N", "arrays chain", "device-only", "arrays / device-only", "goal", "host-array chain",
               "host / arrays"});
  vb::Table stacks({"device", "(64,128,128) @ (64,128,128): one launch", "64 matmuls", "64 matmuls / one launch"});
  nlohmann::json out = nlohmann::json::array();
  bool failed = false;
  for (const auto& info : vgpu::Runtime::global().devices()) {
    if (!wanted.empty() && std::find(wanted.begin(), wanted.end(), info.backend) == wanted.end()) continue;
    try {
      vgpu::Device dev = vgpu::Runtime::global().open(info.id());
      const std::uint32_t n = o.quick ? 128 : info.type == vgpu::DeviceType::software ? 256 : 1024;
      const std::uint64_t nn = std::uint64_t{n} * n;
      std::vector<float> a = vb::random_floats(nn, 1), b = vb::random_floats(nn, 2);
      for (float& x : b) x /= std::sqrt(static_cast<float>(n));  // keeps the chain's values bounded
      const vgpu::Array A = vgpu::Array::from_host(dev, vgpu::DType::f32, {n, n}, a.data());
      const vgpu::Array B = vgpu::Array::from_host(dev, vgpu::DType::f32, {n, n}, b.data());
      vgpu::Array X;
      auto f_arrays = [&] {
        X = A;
        for (int i = 0; i < kChain; ++i) X = vgpu::matmul(X, B);
        dev.synchronize();
      };
      // The same launches, recorded once: X0 → X1 → X0 … over two buffers.
      const vgpu::KernelPlan plan = vgpu::ops::matmul(dev, n, n, n);
      if (plan.steps.size() != 1) throw vgpu::Error(vgpu::ErrorCategory::not_supported, "split-K plan", "");
      vgpu::Kernel k = dev.compile(plan.source, plan.options);
      vgpu::Buffer x0 = dev.create_buffer(nn * 4), x1 = dev.create_buffer(nn * 4);
      dev.write(x0, a.data(), nn * 4);
      vgpu::BindingSet fwd = dev.bind(k, {{0, x0}, {1, B.buffer()}, {2, x1}});
      vgpu::BindingSet back = dev.bind(k, {{0, x1}, {1, B.buffer()}, {2, x0}});
      vgpu::Batch batch = dev.create_batch();
      for (int i = 0; i < kChain; ++i)
        batch.dispatch(k, i % 2 ? back : fwd, plan.steps[0].params, plan.steps[0].groups);
      auto f_device = [&] {
        dev.submit(batch);
        dev.synchronize();
      };
      vgpu::Cache cache(dev);
      std::vector<float> h0(nn), h1(nn);
      auto f_host = [&] {
        h0 = a;
        for (int i = 0; i < kChain; ++i) {
          cache.matmul(h0.data(), b.data(), h1.data(), n, n, n);
          std::swap(h0, h1);
        }
      };
      std::vector<vb::Case> cases{{"arrays", f_arrays, 1}, {"device", f_device, 1}, {"host", f_host, 1}};
      const auto st = vb::run_interleaved(cases, rounds, target);
      // Checked: the arrays chain equals the host chain (both float32, the same kernels' results).
      std::vector<float> got(nn);
      X.read(got.data());
      double worst = 0, scale = 0;
      for (std::uint64_t i = 0; i < nn; ++i) {
        worst = std::max(worst, std::abs(double(got[i]) - h0[i]));
        scale = std::max(scale, std::abs(double(h0[i])));
      }
      const bool ok = worst <= 1e-3 * std::max(1.0, scale);
      if (!ok) {
        failed = true;
        std::cout << "WRONG " << info.id() << ": arrays chain differs from the host chain by " << worst << "\n";
      }
      const double ratio = st[0].median / st[1].median;
      t.add({info.id() + " (" + std::string(vgpu::to_string(info.type)) + ")", std::to_string(n), vb::fmt_stats(st[0]),
             vb::fmt_stats(st[1]), vb::fmt_ratio(ratio), ratio <= 1.1 ? "≤ 1.1x: met" : "≤ 1.1x: MISSED",
             vb::fmt_stats(st[2]), vb::fmt_ratio(st[2].median / st[0].median)});
      out.push_back({{"device", info.id()},
                     {"n", n},
                     {"arrays", st[0].to_json()},
                     {"device_only", st[1].to_json()},
                     {"host", st[2].to_json()},
                     {"checked", ok}});
      // The stack: one launch against one matmul per product.
      constexpr std::uint32_t kStack = 64, kSide = 128;
      const std::uint64_t mat = std::uint64_t{kSide} * kSide;
      std::vector<float> sa = vb::random_floats(kStack * mat, 3), sb = vb::random_floats(kStack * mat, 4);
      const vgpu::Array SA = vgpu::Array::from_host(dev, vgpu::DType::f32, {kStack, kSide, kSide}, sa.data());
      const vgpu::Array SB = vgpu::Array::from_host(dev, vgpu::DType::f32, {kStack, kSide, kSide}, sb.data());
      std::vector<vgpu::Array> pa, pb, pc(kStack);
      for (std::uint32_t i = 0; i < kStack; ++i) {
        pa.push_back(vgpu::Array::from_host(dev, vgpu::DType::f32, {kSide, kSide}, sa.data() + i * mat));
        pb.push_back(vgpu::Array::from_host(dev, vgpu::DType::f32, {kSide, kSide}, sb.data() + i * mat));
      }
      vgpu::Array SC;
      auto f_stack = [&] {
        SC = vgpu::matmul(SA, SB);
        dev.synchronize();
      };
      auto f_each = [&] {
        for (std::uint32_t i = 0; i < kStack; ++i) pc[i] = vgpu::matmul(pa[i], pb[i]);
        dev.synchronize();
      };
      std::vector<vb::Case> stack_cases{{"stack", f_stack, 1}, {"each", f_each, 1}};
      const auto ss = vb::run_interleaved(stack_cases, rounds, target);
      std::vector<float> whole(kStack * mat), one(mat);
      SC.read(whole.data());
      double stack_worst = 0;
      for (std::uint32_t i = 0; i < kStack; ++i) {
        pc[i].read(one.data());
        for (std::uint64_t j = 0; j < mat; ++j)
          stack_worst = std::max(stack_worst, std::abs(double(one[j]) - whole[i * mat + j]));
      }
      const bool stack_ok = stack_worst <= 1e-3 * kSide;
      if (!stack_ok) {
        failed = true;
        std::cout << "WRONG " << info.id() << ": the stack differs from its products one by one by " << stack_worst
                  << "\n";
      }
      stacks.add({info.id(), vb::fmt_stats(ss[0]), vb::fmt_stats(ss[1]), vb::fmt_ratio(ss[1].median / ss[0].median)});
      out.back()["stack"] = {{"one_launch", ss[0].to_json()}, {"per_product", ss[1].to_json()}, {"checked", stack_ok}};
    } catch (const vgpu::Error& e) {
      std::cout << info.id() << ": skipped (" << e.what() << ")\n";
    }
  }
  t.print(std::cout);
  std::cout << "\n";
  stacks.print(std::cout);
  doc["rows"] = out;
  if (!vb::finish(doc, o)) return 1;
  return failed ? 1 : 0;
}
