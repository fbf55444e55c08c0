// tests/cuda_test.cpp — the CUDA backend end to end: NVRTC compile errors, a user CUDA kernel
// against a CPU reference, the L2 round trip of its cubin (in one process, and across processes
// with vgpu-test-backend-child), steady state of persistent kernels and a resubmitted batch.
//
// Every test needs a CUDA device. Without one, main() prints the reason and exits 77, which
// ctest reports as a skip (SKIP_RETURN_CODE), never as a pass.
//
// The ctest entries run with a private VGPU_CACHE_DIR per test case (tests/CMakeLists.txt);
// DiskStore::global() reads it once per process, so the cross-process tests give the child
// program their own temporary directory.
#include <unistd.h>

#include <array>
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "support/cache_fixtures.hpp"
#include "support/catch_session.hpp"
#include "support/expect_error.hpp"
#include "support/helper_path.hpp"
#include "support/numerics.hpp"
#include "support/plan_runner.hpp"
#include "support/scale_add_kernel.hpp"
#include "support/scoped_env.hpp"
#include "vgpu/cache/disk_store.hpp"
#include "vgpu/cache/kernel_key.hpp"
#include "vgpu/cache/precompiled.hpp"
#include "vgpu/vgpu.hpp"

#ifndef VGPU_BACKEND_CHILD
#error "VGPU_BACKEND_CHILD (path of vgpu-test-backend-child) must be defined by the build"
#endif
#ifndef VGPU_TEST_TMP_ROOT
#error "VGPU_TEST_TMP_ROOT must be defined by the build"
#endif

namespace vgpu_test {
namespace {

namespace fs = std::filesystem;
using vgpu::test::ChildRun;
using vgpu::test::entries;
using vgpu::test::only;
using vgpu::test::options_for;
using vgpu::test::quoted;
using vgpu::test::TempDir;
using vgpu::test::why_unavailable;
using vgpu::cache::DiskStore;
using vgpu::cache::EntryKind;

vgpu::Runtime& shared_runtime() {
  static vgpu::Runtime runtime(only(vgpu::BackendKind::cuda));
  return runtime;
}

vgpu::Device cuda_device() { return shared_runtime().open("cuda:0"); }

std::string why_no_cuda() { return why_unavailable(shared_runtime(), vgpu::BackendKind::cuda); }

/// The scale-add kernel for CUDA with cuda as its source (tests vary the source).
vgpu::KernelSource make_source(const std::string& cuda) { return scale_add_source(vgpu::BackendKind::cuda, cuda); }

std::string nonce() {
  return "// run " + std::to_string(::getpid()) + "-" +
         std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()) + "\n";
}

/// Runs the scale-add kernel (a wg-wide block) on n random elements and checks the result
/// against a double reference and the guard elements past n.
void check_scale_add(vgpu::Device& device, const vgpu::Kernel& kernel, std::uint32_t n, std::uint32_t wg) {
  INFO("n = " << n);
  const ScaleAddResult r = run_scale_add(device, kernel, n, wg);
  INFO(r.values.describe());
  CHECK(r.values.ok());
  CHECK(r.guard_changed == 0);
}

/// Runs the child on kScaleAddCuda with the L2 store in cache_dir (disabled when asked), with
/// no other cache settings from this process's environment.
ChildRun run_child(const fs::path& cache_dir, bool disable = false) {
  return vgpu::test::run_backend_child(vgpu::test::helper_path(VGPU_BACKEND_CHILD), "cuda",
                                       cache_dir.parent_path() / (cache_dir.filename().string() + ".cu"),
                                       kScaleAddCuda, cache_dir, disable, kChildN);
}

}  // namespace

TEST_CASE("device info: compute capability, SMs, memory, fingerprint", "[cuda][info]") {
  vgpu::Device device = cuda_device();
  const vgpu::DeviceInfo& info = device.info();
  CHECK(info.backend == vgpu::BackendKind::cuda);
  CHECK(!info.name.empty());
  CHECK(info.memory_bytes > 0);
  CHECK(info.compute_units > 0);
  CHECK(info.limits.max_workgroup_invocations >= 256);
  CHECK_THAT(info.fingerprint.text, Catch::Matchers::Contains("compute_capability="));
  CHECK_THAT(info.fingerprint.text, Catch::Matchers::Contains("nvrtc_version="));
  CHECK_THAT(info.fingerprint.text, Catch::Matchers::Contains("driver_version="));
}

TEST_CASE("user CUDA kernel: matches a CPU reference at awkward sizes", "[cuda][user]") {
  vgpu::Device device = cuda_device();
  vgpu::CompileOptions options;
  options.workgroup_size = {64, 1, 1};
  const vgpu::Kernel kernel = device.compile(make_source(nonce() + kScaleAddCuda), options);
  for (std::uint32_t n : {1u, 15u, 255u, 1000u, 65537u}) check_scale_add(device, kernel, n, 64);
}

TEST_CASE("bad CUDA source: compile_error carrying the NVRTC log, and the device keeps working", "[cuda][errors]") {
  vgpu::Device device = cuda_device();
  vgpu::KernelSource bad = make_source(
      "extern \"C\" __global__ void scale_add(const float* a, const float* b, float* out) {\n"
      "  out[0] = a[0] * no_such_variable;\n"
      "}\n");
  bad.name = "test.cuda_bad";
  bad.params_size = 0;
  const vgpu::CounterSnapshot before = device.counters();
  REQUIRE_VGPU_ERROR(compile_error, "CUDA kernel 'test.cuda_bad' failed to compile:", device.compile(bad));
  REQUIRE_VGPU_ERROR(compile_error, "no_such_variable", device.compile(bad));
  REQUIRE_VGPU_ERROR(compile_error, "test.cuda_bad.cu(2)", device.compile(bad));
  vgpu::KernelSource wrong_entry = make_source(kScaleAddCuda);
  wrong_entry.add_cuda(wrong_entry.find(vgpu::dialect::cuda)->code, "nope");
  REQUIRE_VGPU_ERROR(compile_error, "no entry point 'nope'", device.compile(wrong_entry));
  const vgpu::CounterSnapshot d = device.counters() - before;
  CHECK(d.compiles == 0);
  // The device still compiles and runs a good kernel.
  vgpu::CompileOptions options;
  options.workgroup_size = {128, 1, 1};
  const vgpu::Kernel good = device.compile(make_source(kScaleAddCuda), options);
  check_scale_add(device, good, 1000, 128);
}

TEST_CASE("L2 round trip: a fresh Runtime loads the cubin instead of compiling", "[cuda][l2]") {
  if (!vgpu::cache::DiskStore::global().enabled()) {
    WARN("the L2 store is disabled here; nothing to check");
    return;
  }
  const vgpu::KernelSource source = make_source(nonce() + kScaleAddCuda);
  vgpu::CompileOptions options;
  options.workgroup_size = {64, 1, 1};
  {
    vgpu::Runtime first(only(vgpu::BackendKind::cuda));
    vgpu::Device device = first.open("cuda:0");
    const vgpu::CounterSnapshot before = device.counters();
    const vgpu::Kernel k = device.compile(source, options);
    const vgpu::CounterSnapshot d = device.counters() - before;
    INFO(d.to_string());
    CHECK(d.source_compiles == 1);
    CHECK(d.l2_writes >= 1);
  }
  vgpu::Runtime second(only(vgpu::BackendKind::cuda));
  vgpu::Device device = second.open("cuda:0");
  const vgpu::CounterSnapshot before = device.counters();
  const vgpu::Kernel k = device.compile(source, options);
  const vgpu::CounterSnapshot d = device.counters() - before;
  INFO(d.to_string());
  CHECK(d.l2_hits >= 1);
  CHECK(d.source_compiles == 0);
  check_scale_add(device, k, 1000, 64);
}

TEST_CASE("L2 across processes: the second process loads the first one's cubin", "[cuda][l2][processes]") {
  TempDir tmp("cuda-");
  const fs::path dir = tmp.path / "cache";

  vgpu::test::check_compiled_and_stored(run_child(dir));
  vgpu::test::check_single_entry(dir, EntryKind::cuda_binary, scale_add_key(cuda_device().info()),
                                 cuda_device().info().fingerprint);
  vgpu::test::check_loaded_from_l2(run_child(dir));
}

TEST_CASE("L2 across processes: VGPU_CACHE_DISABLE=1 compiles every time and writes nothing",
          "[cuda][l2][processes]") {
  TempDir tmp("cuda-");
  const fs::path dir = tmp.path / "cache";
  for (int run = 0; run < 2; ++run) {
    const ChildRun r = run_child(dir, true);
    INFO("run " << run << ":\n" << r.output);
    REQUIRE(r.ok());
    CHECK(r.count("source_compiles") == 1);
    CHECK(r.count("l2_hits") == 0);
    CHECK(r.count("l2_writes") == 0);
    CHECK(r.count("store_writes") == 0);
  }
  CHECK(DiskStore(options_for(dir)).list(false).empty());
}

TEST_CASE("L2 damage: a payload the driver refuses is rejected and recompiled", "[cuda][l2][corrupt]") {
  auto& store = vgpu::cache::DiskStore::global();
  if (!store.enabled()) {
    WARN("the L2 store is disabled here; nothing to check");
    return;
  }
  vgpu::CompileOptions options;
  options.workgroup_size = {64, 1, 1};
  // (1) NUL-terminated text the driver takes for PTX and refuses; (2) bytes that are neither a
  // cubin nor NUL-terminated PTX, dropped before the driver sees them.
  const std::vector<std::string> payloads = {std::string("this is not PTX at all") + '\0', "garbage, no terminator"};
  for (std::size_t i = 0; i < payloads.size(); ++i) {
    INFO("payload " << i);
    const vgpu::KernelSource source = make_source(nonce() + kScaleAddCuda);
    vgpu::Runtime runtime(only(vgpu::BackendKind::cuda));
    vgpu::Device device = runtime.open("cuda:0");
    const auto key = vgpu::cache::make_kernel_key(source, *source.find(vgpu::dialect::cuda), options, device.info().fingerprint);
    const std::vector<std::uint8_t> bytes(payloads[i].begin(), payloads[i].end());
    REQUIRE(store.store(vgpu::cache::EntryKind::cuda_binary, key, device.info().fingerprint, bytes, 0));
    const auto rejected_before = store.stats().rejected;
    const vgpu::CounterSnapshot before = device.counters();
    const vgpu::Kernel k = device.compile(source, options);
    const vgpu::CounterSnapshot d = device.counters() - before;
    INFO(d.to_string());
    CHECK(d.l2_rejected == 1);
    CHECK(d.source_compiles == 1);
    const auto rejected_after = store.stats().rejected;
    const std::string reason = i == 0 ? "driver" : "invalid";  // (2): refused by the store's payload check
    auto count = [&](const std::map<std::string, std::uint64_t>& m) {
      auto it = m.find(reason);
      return it == m.end() ? std::uint64_t{0} : it->second;
    };
    CHECK(count(rejected_after) == count(rejected_before) + 1);
    check_scale_add(device, k, 1000, 64);
    // The recompiled cubin replaced the bad entry.
    const auto again = store.load(vgpu::cache::EntryKind::cuda_binary, key, device.info().fingerprint);
    REQUIRE(again.has_value());
    CHECK((*again)[0] == 0x7f);
  }
}

TEST_CASE("L2 damage: a cached module the driver loads but that lacks the entry point is dropped and recompiled",
          "[cuda][l2][corrupt]") {
  auto& store = vgpu::cache::DiskStore::global();
  if (!store.enabled()) {
    WARN("the L2 store is disabled here; nothing to check");
    return;
  }
  vgpu::CompileOptions options;
  options.workgroup_size = {64, 1, 1};
  const vgpu::KernelSource source = make_source(nonce() + kScaleAddCuda);
  vgpu::Runtime runtime(only(vgpu::BackendKind::cuda));
  vgpu::Device device = runtime.open("cuda:0");
  const auto key = vgpu::cache::make_kernel_key(source, *source.find(vgpu::dialect::cuda), options, device.info().fingerprint);
  // Valid PTX the driver JIT-compiles, but its only kernel is not "scale_add".
  const std::string ptx = std::string(".version 7.0\n.target sm_75\n.address_size 64\n"
                                      ".visible .entry another_kernel()\n{\n  ret;\n}\n") + '\0';
  REQUIRE(store.store(vgpu::cache::EntryKind::cuda_binary, key, device.info().fingerprint,
                      std::vector<std::uint8_t>(ptx.begin(), ptx.end()), 0));
  const vgpu::CounterSnapshot before = device.counters();
  const vgpu::Kernel k = device.compile(source, options);  // once failed with "has no entry point"
  const vgpu::CounterSnapshot d = device.counters() - before;
  INFO(d.to_string());
  CHECK(d.l2_rejected == 1);
  CHECK(d.source_compiles == 1);
  check_scale_add(device, k, 1000, 64);
}

TEST_CASE("batch: two dependent launches recorded once, resubmitted (graph replay) with new data", "[cuda][batch]") {
  vgpu::Device device = cuda_device();
  const vgpu::DeviceInfo& info = device.info();
  constexpr std::uint32_t n = 1000;
  const auto axpy = vgpu::ops::axpy(info, n);
  const auto add = vgpu::ops::add(info, n);
  const vgpu::Kernel kaxpy = device.compile(axpy.source, axpy.options);
  const vgpu::Kernel kadd = device.compile(add.source, add.options);
  vgpu::Buffer a = device.create_buffer(4), x = device.create_buffer(n * 4), y = device.create_buffer(n * 4),
               o = device.create_buffer(n * 4);
  // y = a*x + y;  o = y + x (reads the new y).
  vgpu::Batch batch = device.create_batch();
  batch.dispatch(kaxpy, device.bind(kaxpy, {{0, a}, {1, x}, {2, y}}), axpy.steps[0].params, axpy.steps[0].groups);
  batch.dispatch(kadd, device.bind(kadd, {{0, y}, {1, x}, {2, o}}), add.steps[0].params, add.steps[0].groups);
  for (std::uint64_t round = 0; round < 5; ++round) {
    INFO("submit " << round);
    const float av = 0.5f + static_cast<float>(round);
    const auto xv = random_floats(n, 40 + round), yv = random_floats(n, 50 + round);
    device.write(a, &av, 4);
    device.write(x, xv.data(), n * 4);
    device.write(y, yv.data(), n * 4);
    const vgpu::CounterSnapshot before = device.counters();
    device.submit(batch);
    std::vector<float> go(n, kNaN);
    device.read(o, go.data(), n * 4);
    const vgpu::CounterSnapshot d = device.counters() - before;
    CHECK(d.dispatches == 2);
    CHECK(d.compiles + d.binds + d.allocations == 0);
    Reference ro;
    for (std::uint32_t i = 0; i < n; ++i) {
      const double yn = static_cast<double>(av) * xv[i] + yv[i];
      ro.value.push_back(yn + xv[i]);
      ro.bound.push_back(4 * kEps32 * (std::abs(static_cast<double>(av) * xv[i]) + std::abs(yv[i]) + std::abs(xv[i])));
    }
    const Comparison c = compare(go, ro);
    INFO(c.describe());
    CHECK(c.ok());
  }
}

TEST_CASE("L3: every built-in op loads from the embedded fatbin, with no NVRTC compile", "[cuda][l3]") {
#if VGPU_TEST_EXPECT_CUDA_FATBIN
  vgpu::Runtime fresh(only(vgpu::BackendKind::cuda));  // an empty L1
  vgpu::Device device = fresh.open("cuda:0");
  const vgpu::DeviceInfo& info = device.info();
  // Shapes that take each matmul tiling on this GPU, and every other built-in.
  const std::uint32_t sms = info.compute_units;
  std::vector<vgpu::KernelPlan> plans = {vgpu::ops::matmul(info, 16, 16, 16),
                                         vgpu::ops::matmul(info, 128 * sms, 8, 128),
                                         vgpu::ops::matmul(info, 128 * ((sms + 1) / 2), 8, 128),
                                         vgpu::ops::axpy(info, 1000),
                                         vgpu::ops::add(info, 1000),
                                         vgpu::ops::mul(info, 1000),
                                         vgpu::ops::reduce_sum(info, 100000),
                                         vgpu::ops::softmax_rows(info, 3, 7)};
  std::set<std::string> tilings;
  for (const auto& p : plans)
    if (p.source.name == "vgpu.matmul") tilings.insert(p.options.defines.at("VGPU_MM_BM") + "x" + p.options.defines.at("VGPU_MM_BN"));
  CHECK(tilings.size() == 3);
  for (const auto& p : plans) {
    INFO(p.source.name);
    const vgpu::CounterSnapshot before = device.counters();
    device.compile(p.source, p.options);
    const vgpu::CounterSnapshot after = device.counters();
    CHECK(after.l3_hits == before.l3_hits + 1);
    CHECK(after.source_compiles == before.source_compiles);
  }
#else
  WARN("built without nvcc: no CUDA fatbins; built-ins compile with NVRTC (checked by cuda.nvrtc_builtins)");
  CHECK(vgpu::cache::precompiled_cuda_count() == 0);
#endif
}

TEST_CASE("matmul: every CUDA tiling is right at awkward and tile-sized shapes, on both paths", "[cuda][matmul]") {
  vgpu::Device device = cuda_device();
  const std::array<std::uint32_t, 5> tilings[] = {{128, 128, 8, 8, 8}, {128, 64, 8, 8, 4}, {64, 64, 16, 4, 4}};
  const char* names[] = {"VGPU_MM_BM", "VGPU_MM_BN", "VGPU_MM_BK", "VGPU_MM_TM", "VGPU_MM_TN"};
  struct Shape {
    std::uint32_t m, k, n;
  };
  // 1×1×1; K not a multiple of BK and N not of 4 (checked path everywhere); exact tiles
  // (fast path everywhere); interiors on the fast path with ragged edges.
  const Shape shapes[] = {{1, 1, 1}, {67, 33, 129}, {128, 16, 128}, {256, 64, 384}, {300, 257, 200}, {515, 96, 260}};
  std::uint64_t seed = 100;
  for (const auto& t : tilings)
    for (const Shape& s : shapes)
      for (Path path : {Path::raw, Path::persistent}) {
        vgpu::KernelPlan plan = vgpu::ops::matmul(device.info(), s.m, s.k, s.n);
        for (int i = 0; i < 5; ++i) plan.options.defines[names[i]] = std::to_string(t[i]);
        plan.options.workgroup_size = {t[1] / t[4], t[0] / t[3], 1};
        plan.steps[0].groups = vgpu::Groups{(s.n + t[1] - 1) / t[1], (s.m + t[0] - 1) / t[0], 1};
        INFO("tiling " << t[0] << "x" << t[1] << ", " << s.m << "x" << s.k << "x" << s.n << " via " << to_string(path));
        HostTensors args{random_floats(std::size_t(s.m) * s.k, ++seed), random_floats(std::size_t(s.k) * s.n, ++seed),
                         std::vector<float>(std::size_t(s.m) * s.n)};
        const Reference ref = matmul_reference(args[0], args[1], s.m, s.k, s.n);
        run_plan(device, plan, args, path);
        const Comparison c = compare(args[2], ref);
        INFO(c.describe());
        CHECK(c.ok());
      }
}

TEST_CASE("round trip: repeated calls with new data (direct, captured, replayed) are each right", "[cuda][graph]") {
  // Copies by kernel on mapped staging (small trips), by memcpy (over 64 KiB, or zero copy
  // off), and without graphs: every way must give the same right answers.
  const char* mode = GENERATE("default", "VGPU_CUDA_ZERO_COPY=0", "VGPU_CUDA_GRAPHS=0");
  INFO("mode " << mode);
  std::optional<ScopedEnv> env;
  if (std::string(mode) != "default") {
    const std::string m(mode);
    env.emplace(m.substr(0, m.find('=')), m.substr(m.find('=') + 1));
  }
  vgpu::Runtime runtime(only(vgpu::BackendKind::cuda));  // reads the environment when opening
  vgpu::Device device = runtime.open("cuda:0");
  for (const auto& [m, k, n] : {std::array<std::uint32_t, 3>{16, 16, 16}, std::array<std::uint32_t, 3>{70, 300, 33}}) {
    vgpu::PersistentKernel kernel(device, vgpu::ops::matmul(device.info(), m, k, n));
    for (std::uint64_t call_no = 0; call_no < 6; ++call_no) {
      INFO(m << "x" << k << "x" << n << ", call " << call_no);
      HostTensors args{random_floats(std::size_t(m) * k, 500 + call_no), random_floats(std::size_t(k) * n, 600 + call_no),
                       std::vector<float>(std::size_t(m) * n, kNaN)};
      const Reference ref = matmul_reference(args[0], args[1], m, k, n);
      call(kernel, args);
      const Comparison c = compare(args[2], ref);
      INFO(c.describe());
      CHECK(c.ok());
    }
  }
  // The axpy output is also an input: a replayed trip must upload the new y every time.
  vgpu::PersistentKernel axpy(device, vgpu::ops::axpy(device.info(), 1000));
  for (std::uint64_t call_no = 0; call_no < 5; ++call_no) {
    INFO("axpy call " << call_no);
    HostTensors args{{0.5f + float(call_no)}, random_floats(1000, 700 + call_no), random_floats(1000, 800 + call_no)};
    const Reference ref = axpy_reference(args[0][0], args[1], args[2]);
    call(axpy, args);
    const Comparison c = compare(args[2], ref);
    INFO(c.describe());
    CHECK(c.ok());
  }
}

TEST_CASE("steady state on CUDA: 200 persistent calls compile, allocate and bind nothing", "[cuda][steady]") {
  vgpu::Device device = cuda_device();
  const vgpu::DeviceInfo& info = device.info();
  struct Case {
    vgpu::KernelPlan plan;
    HostTensors args;
    std::function<Reference(const HostTensors&)> reference;
    std::size_t output;
    std::size_t poke;
  };
  std::vector<Case> cases;
  cases.push_back({vgpu::ops::matmul(info, 67, 33, 129),
                   {random_floats(67 * 33, 11), random_floats(33 * 129, 12), std::vector<float>(67 * 129)},
                   [](const HostTensors& a) { return matmul_reference(a[0], a[1], 67, 33, 129); },
                   2,
                   0});
  cases.push_back({vgpu::ops::reduce_sum(info, 100000),
                   {random_floats(100000, 13), {0.0f}},
                   [](const HostTensors& a) { return sum_reference(a[0]); },
                   1,
                   0});
  cases.push_back({vgpu::ops::softmax_rows(info, 15, 1000),
                   {random_floats(15 * 1000, 14), std::vector<float>(15 * 1000)},
                   [](const HostTensors& a) { return softmax_reference(a[0], 15, 1000); },
                   1,
                   0});
  cases.push_back({vgpu::ops::add(info, 1000),
                   {random_floats(1000, 15), random_floats(1000, 16), std::vector<float>(1000)},
                   [](const HostTensors& a) { return binary_reference(a[0], a[1], false); },
                   2,
                   0});
  for (auto& c : cases) {
    INFO(c.plan.source.name);
    vgpu::PersistentKernel kernel(device, c.plan);
    call(kernel, c.args);
    const vgpu::CounterSnapshot before = device.counters();
    for (std::uint64_t i = 0; i < 200; ++i) {
      auto& v = c.args[c.poke];
      v[(i * 7919) % v.size()] = static_cast<float>(i % 13) * 0.25f - 1.5f;
      call(kernel, c.args);
    }
    const vgpu::CounterSnapshot d = device.counters() - before;
    INFO(d.to_string());
    CHECK(d.compiles == 0);
    CHECK(d.source_compiles == 0);
    CHECK(d.allocations == 0);
    CHECK(d.binds == 0);
    CHECK(d.dispatches == 200 * c.plan.steps.size());
    const Comparison cmp = compare(c.args[c.output], c.reference(c.args));
    INFO(cmp.describe());
    CHECK(cmp.ok());
  }
}

}  // namespace vgpu_test

int main(int argc, char* argv[]) {
  bool listing = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.starts_with("--list") || arg == "-h" || arg == "--help") listing = true;
  }
  if (!listing) {
    ::setenv("VGPU_CACHE_DIR", VGPU_TEST_TMP_ROOT "/default-cache", 0);
    const std::string why = vgpu_test::why_no_cuda();
    if (!why.empty()) {
      std::printf("SKIPPED cuda tests: no CUDA device: %s\n", why.c_str());
      return 77;
    }
    const vgpu::DeviceInfo& info = vgpu_test::cuda_device().info();
    std::printf("cuda tests on %s (%s, %s)\n", info.id().c_str(), info.name.c_str(), info.api_version.c_str());
    std::fflush(stdout);
  }
  return vgpu_test::run_catch_session(argc, argv);
}
