// SPDX-License-Identifier: Apache-2.0
// bench/bench_dispatch.cpp — vgpu-bench-dispatch: what a call costs beyond the kernel itself,
// on device cpu:0, all cases of one table sampled round-robin in one run.
//
//   (a) steady   PersistentKernel call for matmul (upload A, B + dispatch + read C back)
//   (b) naive    a new PersistentKernel every call (plan, compile through L1, allocate, bind, run)
//   (c) cold     a new Runtime + device every call (new DeviceCore, empty L1, nothing cached)
//   (d) lookups  Device::compile of an already-compiled built-in (L1 hit),
//                KernelDatabase::get hit, Cache::matmul at N=16, and the key-first hot path's
//                targets: Cache::matmul N=16 / steady call (<= 1.5x), get hit (<= 150 ns)
//   (e) batching 100 axpy dispatches (n=1024) as one Batch submit vs 100 Device::dispatch calls
//
// Counters are checked alongside so each case measures what it claims (e.g. (a) compiles,
// allocates and binds nothing; (b) hits L1 instead of compiling).
#include <cstdint>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "bench_util.hpp"
#include "vgpu/vgpu.hpp"

namespace {

using namespace vgpu;
namespace vb = vgpu::bench;

RuntimeOptions cpu_only() { return RuntimeOptions{.allowed = {BackendKind::cpu}, .forced_device = {}, .backends = {}}; }

// Host matrices for one square matmul size.
struct MatmulData {
  std::uint64_t n;
  std::vector<float> a, b, c;
  explicit MatmulData(std::uint64_t size)
      : n(size), a(vb::random_floats(n * n, 1)), b(vb::random_floats(n * n, 2)), c(n * n) {}
  void call(PersistentKernel& pk) {
    pk({TensorArg(a.data(), {n, n}), TensorArg(b.data(), {n, n}), TensorArg(c.data(), {n, n})});
  }
};

// Returns the counter change per call of fn, over calls calls.
std::string counters_per_call(Device& dev, int calls, const std::function<void()>& fn) {
  const CounterSnapshot before = dev.counters();
  for (int i = 0; i < calls; ++i) fn();
  const CounterSnapshot d = dev.counters() - before;
  auto per = [&](std::uint64_t v) {
    return v % static_cast<std::uint64_t>(calls) == 0 ? std::to_string(v / calls) : vb::fmt(double(v) / calls, 2);
  };
  return "compiles=" + per(d.compiles) + " l1_hits=" + per(d.l1_hits) + " allocations=" + per(d.allocations) +
         " binds=" + per(d.binds) + " submits=" + per(d.submits) + " dispatches=" + per(d.dispatches);
}

}  // namespace

int main(int argc, char** argv) {
  const vb::Options opt = vb::parse_args(
      argc, argv, "per-call cost of persistent vs recreated kernels, cache lookups and batched dispatch on cpu:0.");
  nlohmann::json doc;
  doc["bench"] = "vgpu-bench-dispatch";
  doc["machine"] = vb::print_header("vgpu-bench-dispatch: call overhead on cpu:0", opt);

  const int rounds = opt.quick ? 5 : 21;
  const double target = opt.quick ? 0.001 : 0.01;  // seconds per sample

  try {
    Runtime runtime(cpu_only());
    Device dev = runtime.open("cpu:0");
    std::cout << "device: " << dev.info().id() << " '" << dev.info().name << "' (" << dev.info().driver_version
              << ")\n\n";
    doc["device"] = {{"id", dev.info().id()}, {"name", dev.info().name}, {"driver_version", dev.info().driver_version}};

    // ---- (a) steady vs (b) new PersistentKernel per call vs (c) new Runtime + device per call.
    std::cout << "## (a) steady PersistentKernel call vs (b) new PersistentKernel per call vs (c) new Runtime+device "
                 "per call\n"
                 "matmul N×N×N, per call = upload A,B + dispatch + read C; median (min)\n\n";
    vb::Table t1({"N", "(a) steady", "(b) new kernel", "(c) new runtime", "(b)/(a)", "(c)/(a)", "kernel only"});
    std::vector<std::string> counter_lines;
    double steady16 = 0;
    std::vector<std::unique_ptr<PersistentKernel>> keep;  // (a) kernels, reused by (d)
    for (const std::uint64_t n : {std::uint64_t{16}, std::uint64_t{256}}) {
      auto data = std::make_shared<MatmulData>(n);
      const auto n32 = static_cast<std::uint32_t>(n);
      auto pk = std::make_unique<PersistentKernel>(dev, ops::matmul(dev, n32, n32, n32));
      PersistentKernel* steady = pk.get();
      keep.push_back(std::move(pk));

      // The compute alone, for scale: dispatch + sync on buffers bound once, no copies.
      KernelPlan plan = ops::matmul(dev, n32, n32, n32);
      Kernel kernel = dev.compile(plan.source, plan.options);
      const std::uint64_t bytes = n * n * sizeof(float);
      Buffer ba = dev.create_buffer(bytes), bb = dev.create_buffer(bytes), bc = dev.create_buffer(bytes);
      dev.write(ba, data->a.data(), bytes);
      dev.write(bb, data->b.data(), bytes);
      BindingSet bound = dev.bind(kernel, {Binding{0, ba}, Binding{1, bb}, Binding{2, bc}});

      auto fa = [&] { data->call(*steady); };
      auto fb = [&] {
        PersistentKernel fresh(dev, ops::matmul(dev, n32, n32, n32));
        data->call(fresh);
      };
      auto fc = [&] {
        Runtime cold(cpu_only());
        Device d = cold.open("cpu:0");
        PersistentKernel fresh(d, ops::matmul(d, n32, n32, n32));
        data->call(fresh);
      };
      auto fk = [&] {
        dev.dispatch(kernel, bound, plan.steps[0].params, plan.steps[0].groups);
        dev.synchronize();
      };
      std::vector<vb::Case> cases = {{"a", fa}, {"b", fb}, {"c", fc}, {"kernel", fk}};
      const auto st = vb::run_interleaved(cases, rounds, target);
      const double rb = st[1].median / st[0].median, rc = st[2].median / st[0].median;
      t1.add({std::to_string(n), vb::fmt_stats(st[0]), vb::fmt_stats(st[1]), vb::fmt_stats(st[2]), vb::fmt_ratio(rb),
              vb::fmt_ratio(rc), vb::fmt_stats(st[3])});
      if (n == 16) steady16 = st[0].median;
      counter_lines.push_back("N=" + std::to_string(n) + " (a) per call: " + counters_per_call(dev, 10, fa));
      counter_lines.push_back("N=" + std::to_string(n) + " (b) per call: " + counters_per_call(dev, 10, fb));
      doc["persistent"].push_back({{"n", n},
                                   {"steady", st[0].to_json()},
                                   {"new_kernel", st[1].to_json()},
                                   {"new_runtime", st[2].to_json()},
                                   {"kernel_only", st[3].to_json()},
                                   {"ratio_new_kernel_over_steady", rb},
                                   {"ratio_new_runtime_over_steady", rc}});
    }
    t1.print();
    std::cout << "\n'kernel only' = Device::dispatch + synchronize on pre-uploaded, pre-bound buffers.\n"
                 "device counters (changes per call):\n";
    for (const auto& l : counter_lines) std::cout << "  " << l << "\n";
    std::cout << "\n";

    // ---- (d) lookup costs on warm caches.
    std::cout << "## (d) cache hits, per call; median (min)\n\n";
    {
      auto data = std::make_shared<MatmulData>(16);
      KernelPlan plan16 = ops::matmul(dev, 16, 16, 16);
      (void)dev.compile(plan16.source, plan16.options);
      KernelDatabase db(dev);
      (void)db.get("matmul", {16, 16, 16});
      Cache cache(dev);
      cache.matmul(data->a.data(), data->b.data(), data->c.data(), 16, 16, 16);

      auto f_compile = [&] { (void)dev.compile(plan16.source, plan16.options); };
      auto f_plan = [&] { (void)ops::matmul(dev, 16, 16, 16); };
      auto f_get = [&] { (void)db.get("matmul", {16, 16, 16}); };
      auto f_cache = [&] { cache.matmul(data->a.data(), data->b.data(), data->c.data(), 16, 16, 16); };
      auto f_steady = [&] { data->call(*keep.front()); };
      std::vector<vb::Case> cases = {{"Device::compile (L1 hit), matmul source", f_compile},
                                     {"ops::matmul plan build, N=16 (what a get() miss builds)", f_plan},
                                     {"KernelDatabase::get hit, matmul N=16", f_get},
                                     {"Cache::matmul N=16 (get + call)", f_cache},
                                     {"(a) steady PersistentKernel call N=16", f_steady}};
      const auto st = vb::run_interleaved(cases, rounds, target);
      const double ref = st[4].median;
      vb::Table t2({"operation", "per call", "vs (a) steady N=16"});
      for (std::size_t i = 0; i < cases.size(); ++i) {
        t2.add({cases[i].name, vb::fmt_stats(st[i]), vb::fmt(st[i].median / ref, 2)});
        doc["lookups"].push_back({{"operation", cases[i].name}, {"stats", st[i].to_json()}});
      }
      t2.print();
      std::cout << "\ncounters per Device::compile hit: " << counters_per_call(dev, 100, f_compile) << "\n"
                << "Cache::matmul overhead over a steady call: " << vb::fmt_time(st[3].median - ref) << " ("
                << "(a) measured in table (a) at N=16: " << vb::fmt_time(steady16) << ")\n"
                << cache.report() << "\n";
      // The key-first hot path's targets, from this one table (same run, interleaved samples).
      const double ratio = st[3].median / ref, get_ns = st[2].median * 1e9;
      std::cout << "hot path: Cache::matmul N=16 / steady PersistentKernel call = " << vb::fmt(ratio, 2)
                << "x (target <= 1.5x: " << (ratio <= 1.5 ? "met" : "NOT met") << ")\n"
                << "hot path: KernelDatabase::get hit = " << vb::fmt(get_ns, 0)
                << " ns (target <= 150 ns: " << (get_ns <= 150 ? "met" : "NOT met") << ")\n\n";
      doc["hot_path"] = {{"cache_matmul_over_steady", ratio},
                         {"get_hit_ns", get_ns},
                         {"steady_n16_s", ref},
                         {"cache_matmul_n16_s", st[3].median}};
    }

    // ---- (e) 100 axpy dispatches: one Batch submit vs 100 Device::dispatch calls.
    std::cout << "## (e) 100 axpy dispatches (n=1024): one Batch submit vs 100 Device::dispatch calls\n\n";
    {
      constexpr int kDispatches = 100;
      constexpr std::uint64_t kN = 1024;
      KernelPlan plan = ops::axpy(dev.info(), kN);
      Kernel kernel = dev.compile(plan.source, plan.options);
      const float alpha = 1e-7f;  // keeps y bounded over many repeats
      const std::vector<float> x = vb::random_floats(kN, 3), y = vb::random_floats(kN, 4);
      Buffer ba = dev.create_buffer(sizeof(float)), bx = dev.create_buffer(kN * 4), by = dev.create_buffer(kN * 4);
      dev.write(ba, &alpha, sizeof alpha);
      dev.write(bx, x.data(), kN * 4);
      dev.write(by, y.data(), kN * 4);
      BindingSet bound = dev.bind(kernel, {Binding{0, ba}, Binding{1, bx}, Binding{2, by}});
      const PlanStep& step = plan.steps.at(0);
      Batch batch = dev.create_batch();
      for (int i = 0; i < kDispatches; ++i) batch.dispatch(kernel, bound, step.params, step.groups);

      auto f_batch = [&] {
        dev.submit(batch);
        dev.synchronize();
      };
      auto f_separate = [&] {
        for (int i = 0; i < kDispatches; ++i) dev.dispatch(kernel, bound, step.params, step.groups);
        dev.synchronize();
      };
      auto f_separate_sync = [&] {
        for (int i = 0; i < kDispatches; ++i) {
          dev.dispatch(kernel, bound, step.params, step.groups);
          dev.synchronize();
        }
      };
      std::vector<vb::Case> cases = {{"Batch of 100, one submit + sync", f_batch},
                                     {"100 x Device::dispatch, one sync", f_separate},
                                     {"100 x (Device::dispatch + sync)", f_separate_sync}};
      const auto st = vb::run_interleaved(cases, rounds, target);
      vb::Table t3({"way", "per dispatch", "per 100", "vs batch"});
      for (std::size_t i = 0; i < cases.size(); ++i) {
        vb::Stats per = st[i];
        per.median /= kDispatches;
        per.min /= kDispatches;
        t3.add({cases[i].name, vb::fmt_stats(per), vb::fmt_stats(st[i]), vb::fmt_ratio(st[i].median / st[0].median)});
        doc["batching"].push_back({{"way", cases[i].name}, {"per_100", st[i].to_json()}});
      }
      t3.print();
      std::cout << "\ncounters per 100: batch: " << counters_per_call(dev, 5, f_batch)
                << "\n                 separate: " << counters_per_call(dev, 5, f_separate) << "\n";
    }

    if (!vb::finish(doc, opt)) return 1;
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "vgpu-bench-dispatch: " << e.what() << "\n";
    return 1;
  }
}
