// SPDX-License-Identifier: Apache-2.0
// bench/bench_gpu.cpp — vgpu-bench-gpu: per GPU device (Vulkan, OpenGL, CUDA as built),
// side by side in one run: matmul GFLOP/s vs cuBLAS SGEMM, steady N=16 round trip (one
// round_trip call vs separate calls), persistent vs recompile-each-call, batched per-dispatch
// cost, kernel creation cold vs L2 vs L1, a built-in in a fresh runtime (L3), and on CUDA every
// CUDA matmul tiling (backends/cuda/cuda_op_tuner.cpp) at 1024/2048/4096 (1024 with --quick), and
// on Vulkan and OpenGL every GLSL matmul tiling at 1024/2048/4096 (256/512 with --quick or on a
// software device); each table marks the plan's (measured) choice, the rule's pick and the candidates.
// Devices: every non-CPU device, or those of VGPU_BENCH_BACKENDS (comma list, cpu allowed).
// --profile vgpu|cublas[:N] (for tools/gpu-run.sh remote ncu): only one N×N×N product (4096 by
// default) — vgpu's CUDA matmul as the tuner (or VGPU_MATMUL_TILING) picks it, or cuBLAS SGEMM —
// a warm-up and two timed runs, so a profiler sees little else.
#include <array>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <random>

#include "bench_util.hpp"
#include "builtin_plans.hpp"  // the runtime's: plans under a forced tiling, a device's tuner
#include "cublas_ref.hpp"
#include "vgpu/kernels/gpu_tuning.hpp"
#include "vgpu/vgpu.hpp"
#if VGPU_BENCH_CUDA_TILINGS
#include "cuda_op_tuner.hpp"  // the CUDA backend's own header (bench/CMakeLists.txt adds its directory)
#endif

namespace vb = vgpu::bench;
using vb::Clock;

namespace {

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// GFLOP/s of the matmul kernel alone (dispatch + synchronize on uploaded buffers), checked
// against a double-precision sum at a few entries so a wrong kernel cannot post a number.
double matmul_gflops(vgpu::Device& dev, const vgpu::KernelPlan& plan, std::uint32_t n, int reps, double* max_err) {
  vgpu::Kernel k = dev.compile(plan.source, plan.options);
  auto a = vb::random_floats(std::size_t(n) * n, 1), b = vb::random_floats(std::size_t(n) * n, 2);
  const std::uint64_t bytes = std::uint64_t(n) * n * 4;
  vgpu::Buffer A = dev.create_buffer(bytes), B = dev.create_buffer(bytes), C = dev.create_buffer(bytes);
  dev.write(A, a.data(), bytes);
  dev.write(B, b.data(), bytes);
  vgpu::BindingSet set = dev.bind(k, {{0, A}, {1, B}, {2, C}});
  const auto& step = plan.steps[0];
  dev.dispatch(k, set, step.params, step.groups);  // warm-up
  dev.synchronize();
  std::vector<double> gf;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = Clock::now();
    dev.dispatch(k, set, step.params, step.groups);
    dev.synchronize();
    gf.push_back(2.0 * n * n * double(n) / vb::seconds_since(t0) / 1e9);
  }
  std::vector<float> c(std::size_t(n) * n);
  dev.read(C, c.data(), bytes);
  *max_err = 0;
  for (int s = 0; s < 16; ++s) {
    const std::size_t i = (s * 7919u) % n, j = (s * 104729u) % n;
    double ref = 0, mag = 0;
    for (std::uint32_t q = 0; q < n; ++q) {
      ref += double(a[i * n + q]) * b[std::size_t(q) * n + j];
      mag += std::fabs(double(a[i * n + q]) * b[std::size_t(q) * n + j]);
    }
    *max_err = std::max(*max_err, std::fabs(c[i * n + j] - ref) / std::max(mag, 1e-30));
  }
  return median_of(gf);
}

double matmul_gflops(vgpu::Device& dev, std::uint32_t n, int reps, double* max_err) {
  return matmul_gflops(dev, vgpu::ops::matmul(dev, n, n, n), n, reps, max_err);
}

// A copy of the built-in matmul made unique by a define, so nothing (L1, L2, L3) knows it:
// building it pays the full GLSL/CUDA compile and pipeline creation.
vgpu::KernelPlan unique_matmul(const vgpu::DeviceInfo& info, std::uint32_t n, std::uint64_t nonce) {
  vgpu::KernelPlan p = vgpu::ops::matmul(info, n, n, n);
  p.options.defines["VGPU_BENCH_NONCE"] = "n" + std::to_string(nonce);  // an unused token
  return p;
}

struct DeviceResult {
  std::string id, name;
  double gf1024 = 0, gf4096 = 0, err = 0;
  vb::Stats steady16, steady256;
  double recompile16 = 0, recompile256 = 0, batch_per_dispatch = 0, single_per_dispatch = 0;
  double cold = 0, l2 = 0, l1 = 0, l3 = 0;
  vb::Stats separate16;  // N=16 as write, write, submit, read calls instead of one round trip
  struct GlslTiling {
    std::string name;
    std::uint32_t n;
    double gflops;
    bool chosen;             // the plan's pick at n³ on this device (measured once, VGPU_TUNE=measure)
    bool rule;               // the tuner's rule's pick (OpTuner::tune)
    bool candidate = false;  // offered to the measured choice (OpTuner::candidates) at n³
  };
  std::vector<GlslTiling> glsl_tilings;  // Vulkan / OpenGL: every GLSL matmul variant
  std::vector<GlslTiling> cuda_tilings;  // CUDA: every CUDA matmul tiling
};

// The sizes of the GLSL tiling table: software devices (llvmpipe, lavapipe) take seconds per
// 2048³ product, so they run the small sizes.
std::vector<std::uint32_t> glsl_tiling_sizes(const vgpu::DeviceInfo& info, bool quick) {
  const bool software = info.type == vgpu::DeviceType::software || info.type == vgpu::DeviceType::cpu;
  if (quick || software) return {256, 512};
  return {1024, 2048, 4096};
}

DeviceResult bench_device(const vgpu::DeviceInfo& info, const vb::Options& o, std::uint64_t& nonce) {
  DeviceResult r;
  r.id = info.id();
  r.name = info.name;
  vgpu::Device dev = vgpu::Runtime::global().open(info);
  const std::uint32_t big = o.quick ? 1024 : 4096, small = o.quick ? 256 : 1024;
  r.gf1024 = matmul_gflops(dev, small, o.quick ? 3 : 10, &r.err);
  double err2 = 0;
  r.gf4096 = matmul_gflops(dev, big, o.quick ? 2 : 5, &err2);
  r.err = std::max(r.err, err2);

  // Steady PersistentKernel round trips and the recompile-each-call way, N = 16 and 256.
  for (std::uint32_t n : {16u, 256u}) {
    vgpu::PersistentKernel pk(dev, vgpu::ops::matmul(dev, n, n, n));
    auto a = vb::random_floats(std::size_t(n) * n, 3), b = vb::random_floats(std::size_t(n) * n, 4);
    std::vector<float> c(std::size_t(n) * n);
    auto call = [&](vgpu::PersistentKernel& k) {
      k({vgpu::TensorArg(std::as_const(a).data(), {n, n}), vgpu::TensorArg(std::as_const(b).data(), {n, n}),
         vgpu::TensorArg(c.data(), {n, n})});
    };
    // The same N×N product as separate calls on separate buffers: what round_trip saves.
    vgpu::KernelPlan plan = vgpu::ops::matmul(dev, n, n, n);
    vgpu::Kernel k = dev.compile(plan.source, plan.options);
    const std::uint64_t bytes = std::uint64_t(n) * n * 4;
    vgpu::Buffer A = dev.create_buffer(bytes), B = dev.create_buffer(bytes), C = dev.create_buffer(bytes);
    vgpu::Batch sep = dev.create_batch();
    sep.dispatch(k, dev.bind(k, {{0, A}, {1, B}, {2, C}}), plan.steps[0].params, plan.steps[0].groups);
    std::vector<vb::Case> cases{{"steady", [&] { call(pk); }, 0},
                                {"separate",
                                 [&] {
                                   dev.write(A, a.data(), bytes);
                                   dev.write(B, b.data(), bytes);
                                   dev.submit(sep);
                                   dev.read(C, c.data(), bytes);
                                 },
                                 0}};
    auto stats = vb::run_interleaved(cases, o.quick ? 5 : 15, o.quick ? 0.005 : 0.05);
    if (n == 16) r.separate16 = stats[1];
    std::vector<double> rec;
    for (int i = 0; i < (o.quick ? 2 : 5); ++i) {
      const auto t0 = Clock::now();
      vgpu::PersistentKernel fresh(dev, unique_matmul(info, n, ++nonce));
      call(fresh);
      rec.push_back(vb::seconds_since(t0));
    }
    (n == 16 ? r.steady16 : r.steady256) = stats[0];
    (n == 16 ? r.recompile16 : r.recompile256) = median_of(rec);
  }

  // 100 axpy dispatches: one recorded batch, one submit, one sync — vs 100 dispatch calls.
  {
    const std::uint32_t n = 1024;
    vgpu::KernelPlan plan = vgpu::ops::axpy(info, n);
    vgpu::Kernel k = dev.compile(plan.source, plan.options);
    vgpu::Buffer a = dev.create_buffer(4), x = dev.create_buffer(n * 4), y = dev.create_buffer(n * 4);
    vgpu::BindingSet set = dev.bind(k, {{0, a}, {1, x}, {2, y}});
    vgpu::Batch batch = dev.create_batch();
    for (int i = 0; i < 100; ++i) batch.dispatch(k, set, plan.steps[0].params, plan.steps[0].groups);
    std::vector<vb::Case> cases{{"batch",
                                 [&] {
                                   dev.submit(batch);
                                   dev.synchronize();
                                 },
                                 0},
                                {"single",
                                 [&] {
                                   for (int i = 0; i < 100; ++i)
                                     dev.dispatch(k, set, plan.steps[0].params, plan.steps[0].groups);
                                   dev.synchronize();
                                 },
                                 0}};
    auto stats = vb::run_interleaved(cases, o.quick ? 5 : 15, o.quick ? 0.005 : 0.05);
    r.batch_per_dispatch = stats[0].median / 100;
    r.single_per_dispatch = stats[1].median / 100;
  }

  // Kernel creation: cold (front-end compile + pipeline), L2 hit (new runtime: empty L1, SPIR-V
  // or binary and pipeline cache from disk), L1 hit (same device again).
  {
    std::vector<double> cold, l2, l1;
    for (int i = 0; i < (o.quick ? 2 : 5); ++i) {
      vgpu::KernelPlan p = unique_matmul(info, 64, ++nonce);
      auto t0 = Clock::now();
      vgpu::Kernel k = dev.compile(p.source, p.options);
      cold.push_back(vb::seconds_since(t0));
      t0 = Clock::now();
      vgpu::Kernel again = dev.compile(p.source, p.options);
      l1.push_back(vb::seconds_since(t0));
      vgpu::Runtime fresh;  // its own DeviceCore: an empty L1, so only the disk can help
      vgpu::Device dev2 = fresh.open(info.id());
      t0 = Clock::now();
      vgpu::Kernel from_disk = dev2.compile(p.source, p.options);
      l2.push_back(vb::seconds_since(t0));
    }
    r.cold = median_of(cold);
    r.l2 = median_of(l2);
    r.l1 = median_of(l1);
  }
  // A built-in in a fresh runtime: L3 (embedded SPIR-V / fatbin) where the backend has it.
  {
    std::vector<double> l3;
    for (int i = 0; i < (o.quick ? 2 : 5); ++i) {
      vgpu::Runtime fresh;
      vgpu::Device dev2 = fresh.open(info.id());
      vgpu::KernelPlan p = vgpu::ops::matmul(info, 64, 64, 64);
      const auto t0 = Clock::now();
      vgpu::Kernel k = dev2.compile(p.source, p.options);
      l3.push_back(vb::seconds_since(t0));
    }
    r.l3 = median_of(l3);
  }
#if VGPU_BENCH_CUDA_TILINGS
  // CUDA: every tiling, each forced as VGPU_MATMUL_TILING would, so one run shows which wins per size.
  if (info.backend == vgpu::BackendKind::cuda) {
    for (std::uint32_t n : o.quick ? std::vector<std::uint32_t>{1024} : std::vector<std::uint32_t>{1024, 2048, 4096}) {
      const vgpu::OpShape shape{"matmul", n, n, n};
      const auto tuner = vgpu::detail::op_tuner_of(dev);
      const std::string rule = tuner->tune(shape, info).variant;
      std::vector<std::string> offered;
      for (const vgpu::OpTuning& c : tuner->candidates(shape, info)) offered.push_back(c.variant);
      // The plan's own choice: measured once per device and size class (VGPU_TUNE=measure).
      const vgpu::KernelPlan planned = vgpu::ops::matmul(dev, n, n, n);
      for (const auto& t : vgpu::cuda::cuda_matmul_tilings()) {
        const auto forced = vgpu::cuda::cuda_op_tuner(t.name());
        const vgpu::KernelPlan plan = vgpu::detail::builtin_plan("matmul", info, forced.get(), {n, n, n});
        double e = 0;
        double gf = matmul_gflops(dev, plan, n, n >= 2048 ? 5 : 10, &e);
        r.err = std::max(r.err, e);
        if (!(e < 1e-4)) {  // a wrong kernel posts no number (fp32 rounding stays near 1e-7)
          std::cout << "WRONG: CUDA tiling " << t.name() << " at N=" << n << " (max rel err " << vb::fmt_sci(e)
                    << ")\n";
          gf = 0;
        }
        const bool chosen = plan.options.defines == planned.options.defines &&
                            plan.options.workgroup_size == planned.options.workgroup_size;
        r.cuda_tilings.push_back({t.name(), n, gf, chosen, t.name() == rule,
                                  std::find(offered.begin(), offered.end(), t.name()) != offered.end()});
      }
    }
  }
#endif
  // Vulkan / OpenGL: every GLSL matmul variant, each forced as VGPU_MATMUL_TILING would.
  if (info.backend == vgpu::BackendKind::vulkan || info.backend == vgpu::BackendKind::opengl) {
    for (std::uint32_t n : glsl_tiling_sizes(info, o.quick)) {
      const vgpu::OpShape shape{"matmul", n, n, n};
      const std::string rule = vgpu::kernels::glsl_matmul_choice(n, n, n, info).name();
      std::vector<std::string> offered;
      for (const vgpu::OpTuning& c : vgpu::detail::op_tuner_of(dev)->candidates(shape, info))
        offered.push_back(c.variant);
      // The plan's own choice: measured once per device and size class (VGPU_TUNE=measure), so
      // the table shows whether the measurement beat the rule.
      const vgpu::KernelPlan planned = vgpu::ops::matmul(dev, n, n, n);
      std::string chosen = rule;
      for (const auto& t : vgpu::kernels::glsl_matmul_tilings())
        if (t.tuning().options.defines == planned.options.defines &&
            t.tuning().options.workgroup_size == planned.options.workgroup_size)
          chosen = t.name();
      for (const auto& t : vgpu::kernels::glsl_matmul_tilings()) {
        if (!t.fits(info)) continue;  // too much shared memory here: its cells print "-"
        const auto forced = vgpu::kernels::gpu_builtin_tuner(t.name());
        double e = 0;
        const double gf = matmul_gflops(dev, vgpu::detail::builtin_plan("matmul", info, forced.get(), {n, n, n}), n,
                                        n >= 2048 ? 3 : 5, &e);
        r.err = std::max(r.err, e);
        r.glsl_tilings.push_back({t.name(), n, gf, t.name() == chosen, t.name() == rule,
                                  std::find(offered.begin(), offered.end(), t.name()) != offered.end()});
      }
    }
  }
  return r;
}

}  // namespace

// --profile vgpu|cublas[:N]: one product for a profiler (ncu -k vgpu_matmul / gemm); returns the exit code.
int profile_one(const std::string& what) {
  const auto colon = what.find(':');
  const std::string product = what.substr(0, colon);
  const std::string size = colon == std::string::npos ? "4096" : what.substr(colon + 1);
  if (size.empty() || size.size() > 5 || size.find_first_not_of("0123456789") != std::string::npos || size == "0") {
    std::cerr << "vgpu-bench-gpu: --profile " << what << ": N must be a whole number from 1 to 99999. "
              << "Fix: pass e.g. --profile vgpu:4096.\n";
    return 2;
  }
  const auto n = std::uint32_t(std::stoul(size));
  if (product == "cublas") {
    vb::CublasReference cublas;
    if (!cublas.available()) {
      std::cout << "cuBLAS reference: unavailable (" << cublas.reason() << ")\n";
      return 1;
    }
    std::cout << "cuBLAS SGEMM (TF32 off) N=" << n << ": " << vb::fmt(cublas.sgemm_gflops(int(n), 2)) << " GFLOP/s\n";
    return 0;
  }
  if (product != "vgpu") {
    std::cerr << "vgpu-bench-gpu: --profile takes vgpu or cublas, optionally :N (e.g. vgpu:4096), not '" << what
              << "'. Fix: pass --profile vgpu or --profile cublas:4096.\n";
    return 2;
  }
  for (const auto& info : vgpu::Runtime::global().devices()) {
    if (info.backend != vgpu::BackendKind::cuda) continue;
    vgpu::Device dev = vgpu::Runtime::global().open(info);
    const vgpu::KernelPlan plan = vgpu::ops::matmul(dev, n, n, n);
    double err = 0;
    const double gf = matmul_gflops(dev, plan, n, 2, &err);
    std::cout << info.id() << " vgpu matmul N=" << n << " tiling "
              << vgpu::detail::op_tuner_of(dev)->tune({"matmul", n, n, n}, info).variant << ": " << vb::fmt(gf)
              << " GFLOP/s (max rel err " << vb::fmt_sci(err) << ")\n";
    return err < 1e-4 ? 0 : 1;
  }
  std::cout << "no CUDA device: nothing to profile\n";
  return 1;
}

int main(int argc, char** argv) {
  // --profile is this bench's own flag; the rest are the common ones (vb::parse_args).
  std::vector<char*> args{argv[0]};
  std::string profile;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--profile" && i + 1 < argc)
      profile = argv[++i];
    else if (a.rfind("--profile=", 0) == 0)
      profile = std::string(a.substr(10));
    else
      args.push_back(argv[i]);
  }
  if (!profile.empty()) return profile_one(profile);
  const vb::Options o = vb::parse_args(int(args.size()), args.data(),
                                       "GPU devices: matmul vs cuBLAS, round trip, recompile, batching, cache tiers "
                                       "(--profile vgpu|cublas[:N]: one product only, for ncu)");
  // A private cache directory: the cold/L2 figures must not depend on what earlier runs left.
  const auto cache_dir = std::filesystem::temp_directory_path() / ("vgpu-bench-gpu-" + std::to_string(::getpid()));
  if (!std::getenv("VGPU_CACHE_DIR")) setenv("VGPU_CACHE_DIR", cache_dir.c_str(), 1);
  nlohmann::json doc{{"machine", vb::print_header("vgpu-bench-gpu: GPU backends side by side", o)}};
  const std::vector<vgpu::BackendKind> wanted = vb::backends_from_env();
  for (const auto& st : vgpu::Runtime::global().backends())
    std::cout << "backend " << vgpu::to_string(st.kind) << ": " << (st.available ? "available" : st.reason) << "\n";

  vb::CublasReference cublas;
  const std::uint32_t big = o.quick ? 1024 : 4096, small = o.quick ? 256 : 1024;
  double cub_small = 0, cub_big = 0;
  if (cublas.available()) {
    cub_small = cublas.sgemm_gflops(int(small), 10);
    cub_big = cublas.sgemm_gflops(int(big), 10);
    std::cout << "cuBLAS SGEMM (TF32 off): N=" << small << " " << vb::fmt(cub_small) << " GFLOP/s, N=" << big << " "
              << vb::fmt(cub_big) << " GFLOP/s\n";
  } else {
    std::cout << "cuBLAS reference: unavailable (" << cublas.reason() << ")\n";
  }

  // cuBLAS at each size of the GLSL tiling tables, measured once (0: no cuBLAS).
  std::map<std::uint32_t, double> cublas_by_n{{small, cub_small}, {big, cub_big}};
  auto cublas_at = [&](std::uint32_t n) {
    if (!cublas.available()) return 0.0;
    auto it = cublas_by_n.find(n);
    if (it == cublas_by_n.end()) it = cublas_by_n.emplace(n, cublas.sgemm_gflops(int(n), 10)).first;
    return it->second;
  };

  std::vector<DeviceResult> results;
  std::uint64_t nonce = static_cast<std::uint64_t>(::getpid()) << 20;
  for (const auto& info : vgpu::Runtime::global().devices()) {
    const bool pick = wanted.empty() ? info.backend != vgpu::BackendKind::cpu
                                     : std::find(wanted.begin(), wanted.end(), info.backend) != wanted.end();
    if (!pick) continue;
    std::cout << "\n## " << info.id() << " '" << info.name << "' (" << vgpu::to_string(info.type) << ", "
              << info.driver_version << ")\n"
              << std::flush;
    try {
      results.push_back(bench_device(info, o, nonce));
    } catch (const vgpu::Error& e) {
      std::cout << "FAILED: " << e.what() << "\n";
      doc["failures"].push_back({{"device", info.id()}, {"error", e.what()}});
    }
  }
  std::error_code ec;
  std::filesystem::remove_all(cache_dir, ec);
  if (results.empty()) {
    std::cout << "\nno GPU device to benchmark (set VGPU_BENCH_BACKENDS=cpu to bench the CPU device)\n";
    vb::finish(doc, o);
    return 0;
  }

  const std::string sm = std::to_string(small), bg = std::to_string(big);
  vb::Table t({"device", "matmul " + sm + " GF/s", "vs cuBLAS", "matmul " + bg + " GF/s", "vs cuBLAS",
               "N=16 round trip", "N=16 separate calls", "recompile/persistent N=16", "N=256", "batched per dispatch",
               "single per dispatch", "create cold", "L2 hit", "L1 hit", "cold/L2", "built-in fresh (L3)"});
  for (const auto& r : results) {
    t.add({r.id, vb::fmt(r.gf1024), cub_small ? vb::fmt(r.gf1024 / cub_small * 100, 0) + "%" : "-", vb::fmt(r.gf4096),
           cub_big ? vb::fmt(r.gf4096 / cub_big * 100, 0) + "%" : "-", vb::fmt_stats(r.steady16),
           vb::fmt_stats(r.separate16), vb::fmt_ratio(r.recompile16 / r.steady16.median),
           vb::fmt_ratio(r.recompile256 / r.steady256.median), vb::fmt_time(r.batch_per_dispatch),
           vb::fmt_time(r.single_per_dispatch), vb::fmt_time(r.cold), vb::fmt_time(r.l2), vb::fmt_time(r.l1),
           vb::fmt_ratio(r.cold / r.l2), vb::fmt_time(r.l3)});
    doc["devices"].push_back({{"id", r.id},
                              {"name", r.name},
                              {"matmul_gflops", {{sm, r.gf1024}, {bg, r.gf4096}}},
                              {"matmul_max_rel_err", r.err},
                              {"cublas_gflops", {{sm, cub_small}, {bg, cub_big}}},
                              {"steady_n16", r.steady16.to_json()},
                              {"steady_n256", r.steady256.to_json()},
                              {"recompile_n16_s", r.recompile16},
                              {"recompile_n256_s", r.recompile256},
                              {"batched_per_dispatch_s", r.batch_per_dispatch},
                              {"single_per_dispatch_s", r.single_per_dispatch},
                              {"create_cold_s", r.cold},
                              {"create_l2_s", r.l2},
                              {"create_l1_s", r.l1},
                              {"create_builtin_fresh_s", r.l3},
                              {"steady_n16_separate", r.separate16.to_json()}});
    for (const auto& g : r.cuda_tilings)
      doc["devices"].back()["cuda_tilings_gflops"][g.name + "@" + std::to_string(g.n)] = {
          {"gflops", g.gflops},
          {"chosen", g.chosen},
          {"rule", g.rule},
          {"candidate", g.candidate},
          {"cublas_gflops", cublas_at(g.n)}};
    for (const auto& g : r.glsl_tilings)
      doc["devices"].back()["glsl_tilings_gflops"][g.name + "@" + std::to_string(g.n)] = {
          {"gflops", g.gflops},
          {"chosen", g.chosen},
          {"rule", g.rule},
          {"candidate", g.candidate},
          {"cublas_gflops", cublas_at(g.n)}};
  }
  std::cout << "\nmatmul checked at 16 entries against fp64 (max rel err ";
  double worst = 0;
  for (const auto& r : results) worst = std::max(worst, r.err);
  std::cout << vb::fmt_sci(worst) << ")\n\n";
  t.print();
  // One table per device and kernel family (GLSL on Vulkan/OpenGL, CUDA): a row per tiling,
  // GFLOP/s and % of cuBLAS per size; then the fastest tiling per size.
  auto print_tilings = [&](const DeviceResult& r, const std::vector<DeviceResult::GlslTiling>& rows,
                           const std::vector<std::string>& names, const std::string& family, const std::string& marks) {
    if (rows.empty()) return;
    std::vector<std::uint32_t> sizes;
    for (const auto& g : rows)
      if (std::find(sizes.begin(), sizes.end(), g.n) == sizes.end()) sizes.push_back(g.n);
    std::vector<std::string> head{family + " tiling (" + marks + ")"};
    for (std::uint32_t n : sizes) {
      head.push_back("N=" + std::to_string(n) + " GF/s");
      head.push_back("vs cuBLAS");
    }
    vb::Table gt(head);
    for (const std::string& name : names) {
      std::vector<std::string> row{name};
      for (std::uint32_t n : sizes) {
        const auto g = std::find_if(rows.begin(), rows.end(),
                                    [&](const DeviceResult::GlslTiling& x) { return x.n == n && x.name == name; });
        if (g == rows.end()) {
          row.insert(row.end(), {"-", "-"});
          continue;
        }
        const double cub = cublas_at(n);
        row.push_back(vb::fmt(g->gflops) + (g->chosen || g->rule || g->candidate ? " " : "") + (g->chosen ? "*" : "") +
                      (g->rule ? "r" : "") + (g->candidate && !g->chosen && !g->rule ? "+" : ""));
        row.push_back(cub ? vb::fmt(g->gflops / cub * 100, 0) + "%" : "-");
      }
      gt.add(row);
    }
    std::cout << "\n" << r.id << " '" << r.name << "' " << family << " matmul tilings:\n";
    gt.print();
    std::cout << r.id << " fastest " << family << " tiling:";
    for (std::uint32_t n : sizes) {
      const DeviceResult::GlslTiling* best = nullptr;
      for (const auto& g : rows)
        if (g.n == n && (!best || g.gflops > best->gflops)) best = &g;
      const double cub = cublas_at(n);
      std::cout << "  N=" << n << " " << best->name << " " << vb::fmt(best->gflops)
                << (cub ? " (" + vb::fmt(best->gflops / cub * 100, 0) + "% of cuBLAS)" : "");
    }
    std::cout << "\n";
  };
  constexpr const char* kMarks = "* plan's choice, r rule's pick, + other candidate";
  std::vector<std::string> glsl_names;  // every variant, so one the device cannot hold prints "-"
  for (const auto& t : vgpu::kernels::glsl_matmul_tilings()) glsl_names.push_back(t.name());
  for (const auto& r : results) print_tilings(r, r.glsl_tilings, glsl_names, "GLSL", kMarks);
#if VGPU_BENCH_CUDA_TILINGS
  std::vector<std::string> cuda_names;
  for (const auto& t : vgpu::cuda::cuda_matmul_tilings()) cuda_names.push_back(t.name());
  for (const auto& r : results) print_tilings(r, r.cuda_tilings, cuda_names, "CUDA", kMarks);
#endif
  return vb::finish(doc, o) ? 0 : 1;
}
