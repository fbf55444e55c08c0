// SPDX-License-Identifier: Apache-2.0
// tests/mpi/mpi_check_main.cpp — vgpu-mpi-check: the MPI layer's checks, one process per rank
// under mpirun (tests/mpi/mpi_test.sh runs it with -np 4 --oversubscribe).
//
//   vgpu-mpi-check warm directory|bundle   warm_up over the ranks' devices (CPU, lavapipe,
//       llvmpipe): the job's source compiles equal the compiling ranks' (rank 0 compiles from a
//       fresh cache exactly as one rank alone would), every other rank compiles nothing, and the
//       job calibrates each item once per compiling rank
//   vgpu-mpi-check warm-fail  warm_up of an unknown op: rank 0 throws invalid_argument, the
//                           others an unavailable error naming rank 0 (never a hang)
//   vgpu-mpi-check batch    matmul_batch of 17 random 17x33x9 matmuls against a double reference
//                           and against the same batch on one rank (identical); batches of 1, 3
//                           and 17 at 1x1x1 and 17x5x3 equal one rank's; a bad batch on the root
//                           (or a rank whose op/shape differs) is invalid_argument on every rank
//   vgpu-mpi-check split    the measured split: given speeds 1..4 the counts are 2,3,5,7 of 17
//                           on every rank, a rank without a time weighs the median, none: even;
//                           rank 0 on the CPU and the others on their pick_device, the counts
//                           follow the measured speeds and the results stay right
//   vgpu-mpi-check ops      call_batch of add, mul, axpy, softmax_rows, reduce_sum (and matmul)
//                           against a double reference on the root, at awkward sizes
//   vgpu-mpi-check stall    after one good batch, rank 2 sleeps through the next: the others must throw vgpu::Error
//                           (timeout) within 1 s (their cache's device limit, set to 1 s: the
//                           batch's default deadline), print it and MPI_Abort
//   vgpu-mpi-check die      after one good batch, rank 2 calls _exit(1) before the next: the others must not hang
//   vgpu-mpi-check root     ranks that disagree on BatchOptions::root or split, or a root out of range: every
//                           rank throws invalid_argument naming it (no rank returns, none waits out the deadline)
//
// Exit 0 when the checks pass, 3 when one failed (the rank prints why).
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <thread>

#include "vgpu/error.hpp"
#include "vgpu/mpi.hpp"
#include "vgpu/vgpu.hpp"

namespace {

int g_rank = 0;

// A user kernel (a complete GLSL compute shader): on Vulkan and OpenGL it is compiled from
// source at run time (the built-in ops come precompiled, L3), so it is the key whose source
// compiles the warm-up must not repeat per rank.
const char* const kDoubleShader =
    "#version 450\n"
    "layout(local_size_x = 64) in;\n"
    "layout(std430, set = 0, binding = 0) buffer Data { float v[]; } data;\n"
    "void main() { uint i = gl_GlobalInvocationID.x; if (i < data.v.length()) data.v[i] = 2.0 * data.v[i] + 1.0; }\n";

// Compiles the user kernel on every Vulkan and OpenGL device of the runtime.
void compile_user_kernel(vgpu::Runtime& runtime) {
  for (const vgpu::DeviceInfo& d : runtime.devices()) {
    if (d.backend != vgpu::BackendKind::vulkan && d.backend != vgpu::BackendKind::opengl) continue;
    vgpu::KernelSource src;
    src.name = "mpi_test.double";
    src.add_glsl_shader(kDoubleShader);
    runtime.open(d).compile(src);
  }
}

bool fail(const std::string& why) {
  std::printf("rank %d: FAILED: %s\n", g_rank, why.c_str());
  std::fflush(stdout);
  return false;
}

bool check_warm(const std::string& share) {
  vgpu::Runtime& runtime = vgpu::Runtime::global();
  vgpu::mpi::WarmUpOptions options;
  options.share =
      share == "bundle" ? vgpu::mpi::WarmUpOptions::Share::bundle : vgpu::mpi::WarmUpOptions::Share::directory;
  options.work = compile_user_kernel;
  const std::vector<vgpu::mpi::WarmUpItem> items{{"matmul", {17, 33, 9}}, {"matmul", {64, 64, 64}}};
  const vgpu::mpi::WarmUpReport report = vgpu::mpi::warm_up(MPI_COMM_WORLD, runtime, items, options);
  std::printf("rank %d: %s\n", g_rank, report.to_string().c_str());
  std::fflush(stdout);
  bool ok = true;
  // One host: the local rank is the world rank, every rank is local.
  int world = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  if (vgpu::mpi::local_rank(MPI_COMM_WORLD) != g_rank || vgpu::mpi::local_size(MPI_COMM_WORLD) != world)
    ok = fail("local_rank/local_size disagree with the world on one host");
  // What the compiling ranks did, summed: each compiled from a fresh cache, as one rank alone.
  std::uint64_t mine[2] = {0, 0}, compilers[2] = {0, 0};
  const bool compiled = options.share == vgpu::mpi::WarmUpOptions::Share::bundle ? g_rank == 0 : report.leader;
  if (compiled) mine[0] = report.local.source_compiles, mine[1] = report.calibrations;
  MPI_Allreduce(mine, compilers, 2, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
  if (!compiled && report.local.source_compiles != 0)
    ok = fail("a rank that did not compile first made " + std::to_string(report.local.source_compiles) +
              " source compiles");
  if (!compiled && report.calibrations != 0) ok = fail("a rank that did not compile first calibrated");
  if (report.job_source_compiles != compilers[0])
    ok = fail("job source compiles " + std::to_string(report.job_source_compiles) + " != the compiling ranks' " +
              std::to_string(compilers[0]));
  if (report.job_calibrations != compilers[1] || compilers[1] != items.size() * report.compiling_ranks)
    ok = fail("job calibrations " + std::to_string(report.job_calibrations) +
              ", expected one per item per compiling rank");
  if (options.share == vgpu::mpi::WarmUpOptions::Share::bundle) {
    // The bundle goes to the group leaders only: a member receives nothing, and the job moves
    // (groups - 1) bundles, not (ranks - 1).
    std::uint64_t bundle = report.bundle_bytes;
    MPI_Bcast(&bundle, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    if (bundle == 0) ok = fail("rank 0 reports an empty bundle");
    if (!report.leader && (report.bundle_bytes != 0 || report.bundle_bytes_received != 0))
      ok = fail("a group member received the bundle");
    if (report.leader && g_rank != 0 && report.bundle_bytes_received != bundle)
      ok = fail("a group leader received " + std::to_string(report.bundle_bytes_received) + " bytes, not the bundle");
    if (report.job_bundle_bytes != bundle * static_cast<std::uint64_t>(report.groups - 1))
      ok = fail("the job moved " + std::to_string(report.job_bundle_bytes) + " bundle bytes for " +
                std::to_string(report.groups) + " groups");
  }
  std::uint64_t gpus = 0;
  for (const vgpu::DeviceInfo& d : runtime.devices())
    gpus += d.backend == vgpu::BackendKind::vulkan || d.backend == vgpu::BackendKind::opengl;
  // One source compile per key on a compiling rank: at least the user kernel on each GPU device.
  if (compiled && report.local.source_compiles < gpus)
    ok = fail("the compiling rank made " + std::to_string(report.local.source_compiles) + " source compiles for " +
              std::to_string(gpus) + " Vulkan/OpenGL devices");
  if (gpus == 0 && g_rank == 0)
    std::printf("SKIPPED source-compile count: no Vulkan or OpenGL device here, only calibrations checked\n");
  // After the warm-up, a real call on every rank still compiles nothing new off the leaders.
  const vgpu::CounterSnapshot before = runtime.counters();
  vgpu::Cache cache;
  cache.matmul(vgpu::Matrix(17, 33, 1.0f), vgpu::Matrix(33, 9, 1.0f));
  compile_user_kernel(runtime);
  const vgpu::CounterSnapshot after = runtime.counters() - before;
  if (!compiled && after.source_compiles != 0) ok = fail("a matmul after the warm-up compiled from source");
  return ok;
}

// The leader's failure reaches every member as an error naming it, not as a hang.
bool check_warm_failure() {
  try {
    vgpu::mpi::warm_up(MPI_COMM_WORLD, vgpu::Runtime::global(), {{"no_such_op", {4}}});
  } catch (const vgpu::Error& e) {
    const std::string what = e.what();
    if (what.find("Fix:") == std::string::npos) return fail("no Fix hint: " + what);
    if (g_rank == 0) return e.category() == vgpu::ErrorCategory::invalid_argument || fail("leader: " + what);
    return (e.category() == vgpu::ErrorCategory::unavailable && what.find("rank 0 failed") != std::string::npos) ||
           fail("member: " + what);
  }
  return fail("warm_up of an unknown op succeeded");
}

std::vector<vgpu::Matrix> random_batch(std::uint32_t count, std::uint32_t rows, std::uint32_t cols,
                                       std::uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<vgpu::Matrix> out;
  for (std::uint32_t i = 0; i < count; ++i) {
    vgpu::Matrix x(rows, cols);
    for (float& v : x.data) v = dist(gen);
    out.push_back(std::move(x));
  }
  return out;
}

// C of one rank alone (a communicator of one) for the same batch on the same cache.
std::vector<vgpu::Matrix> one_rank(vgpu::Cache& cache, const std::vector<vgpu::Matrix>& a,
                                   const std::vector<vgpu::Matrix>& b) {
  MPI_Comm self = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, g_rank, 0, &self);
  std::vector<vgpu::Matrix> c = g_rank == 0 ? vgpu::mpi::matmul_batch(self, cache, a, b) : std::vector<vgpu::Matrix>{};
  MPI_Comm_free(&self);
  return c;
}

// Batches of 1, 3 and 17 (fewer entries than ranks, and not a multiple) at 1x1x1 and 17x5x3:
// 4 ranks give exactly what one rank gives, in order, and the counts sum to the batch.
bool check_awkward(vgpu::Cache& cache) {
  bool ok = true;
  const std::uint32_t shapes[2][3] = {{1, 1, 1}, {17, 5, 3}};
  for (std::uint32_t count : {1u, 3u, 17u})
    for (const auto& s : shapes) {
      std::vector<vgpu::Matrix> a, b;
      if (g_rank == 0) a = random_batch(count, s[0], s[1], 10 + count), b = random_batch(count, s[1], s[2], 20 + count);
      vgpu::mpi::BatchReport report;
      vgpu::mpi::BatchOptions options;
      options.report = &report;
      options.speed = g_rank + 1.0;  // uneven shares without a calibration per shape (check_split measures)
      const std::vector<vgpu::Matrix> c = vgpu::mpi::matmul_batch(MPI_COMM_WORLD, cache, a, b, options);
      const std::vector<vgpu::Matrix> c1 = one_rank(cache, a, b);
      int sum = 0;
      for (int x : report.counts) sum += x;
      const std::string what = std::to_string(count) + " x " + std::to_string(s[0]) + "x" + std::to_string(s[1]) + "x" +
                               std::to_string(s[2]);
      if (report.counts.size() != 4 || sum != static_cast<int>(count))
        ok = fail(what + ": the counts do not sum to the batch");
      if (g_rank != 0) continue;
      if (c.size() != count || c1.size() != count) {
        ok = fail(what + ": got " + std::to_string(c.size()) + " results");
        continue;
      }
      for (std::uint32_t i = 0; i < count; ++i)
        if (c[i].rows != s[0] || c[i].cols != s[2] || c[i].data != c1[i].data)
          ok = fail(what + ": matmul " + std::to_string(i) + " differs from one rank's");
    }
  return ok;
}

// Bad input never hangs: the root's bad batch, or a rank that disagrees, is invalid_argument
// (with a Fix) on every rank.
bool check_bad_inputs(vgpu::Cache& cache) {
  bool ok = true;
  auto expect_invalid = [&](const std::string& what, const std::function<void()>& call) {
    try {
      call();
      ok = fail(what + ": no error");
    } catch (const vgpu::Error& e) {
      if (e.category() != vgpu::ErrorCategory::invalid_argument ||
          std::string(e.what()).find("Fix:") == std::string::npos)
        ok = fail(what + ": " + e.what());
    }
  };
  std::vector<vgpu::Matrix> a, b;
  if (g_rank == 0) a = random_batch(3, 4, 5, 1), b = random_batch(2, 5, 6, 2);  // 3 A, 2 B
  expect_invalid("3 A and 2 B", [&] { vgpu::mpi::matmul_batch(MPI_COMM_WORLD, cache, a, b); });
  if (g_rank == 0) b = random_batch(3, 6, 6, 2);  // A.cols != B.rows
  expect_invalid("4x5 times 6x6", [&] { vgpu::mpi::matmul_batch(MPI_COMM_WORLD, cache, a, b); });
  vgpu::KernelDatabase db(cache.device());
  std::vector<std::vector<float>> in;
  if (g_rank == 0) in = {std::vector<float>(10, 1.0f)};  // add takes two inputs
  expect_invalid("add with one input", [&] { vgpu::mpi::call_batch(MPI_COMM_WORLD, db, "add", {5}, in); });
  if (g_rank == 0) in = {std::vector<float>(10, 1.0f), std::vector<float>(9, 1.0f)};
  expect_invalid("add of 10 and 9 floats", [&] { vgpu::mpi::call_batch(MPI_COMM_WORLD, db, "add", {5}, in); });
  if (g_rank == 0) in = {std::vector<float>(10, 1.0f), std::vector<float>(10, 1.0f)};
  const vgpu::Shape mine = g_rank == 3 ? vgpu::Shape{2} : vgpu::Shape{5};  // rank 3 disagrees
  expect_invalid("rank 3's shape differs", [&] { vgpu::mpi::call_batch(MPI_COMM_WORLD, db, "add", mine, in); });
  const std::string op = g_rank == 1 ? "no_such_op" : "add";  // rank 1 names an unknown op
  expect_invalid("rank 1's unknown op", [&] { vgpu::mpi::call_batch(MPI_COMM_WORLD, db, op, {5}, in); });
  return ok;
}

bool check_batch() {
  const std::uint32_t count = 17, m = 17, k = 33, n = 9;
  std::vector<vgpu::Matrix> a, b;
  if (g_rank == 0) a = random_batch(count, m, k, 1), b = random_batch(count, k, n, 2);
  vgpu::Cache cache(vgpu::mpi::pick_device(vgpu::Runtime::global(), MPI_COMM_WORLD));
  const std::vector<vgpu::Matrix> c = vgpu::mpi::matmul_batch(MPI_COMM_WORLD, cache, a, b);
  // Each rank alone on the same device kind: the same batch on one communicator of one rank.
  const std::vector<vgpu::Matrix> c1 = one_rank(cache, a, b);
  bool ok = check_awkward(cache);  // both on every rank: each is collective
  ok = check_bad_inputs(cache) && ok;
  if (g_rank != 0) return (c.empty() || fail("a non-root rank got C")) && ok;
  if (c.size() != count) return fail("got " + std::to_string(c.size()) + " results, expected 17");
  for (std::uint32_t i = 0; i < count; ++i)
    for (std::uint32_t r = 0; r < m; ++r)
      for (std::uint32_t col = 0; col < n; ++col) {
        double ref = 0, mag = 0;
        for (std::uint32_t x = 0; x < k; ++x)
          ref += double(a[i](r, x)) * b[i](x, col), mag += std::abs(double(a[i](r, x)) * b[i](x, col));
        if (std::abs(c[i](r, col) - ref) > 1e-5 * mag + 1e-6)
          return fail("matmul " + std::to_string(i) + " (" + std::to_string(r) + "," + std::to_string(col) +
                      ") = " + std::to_string(c[i](r, col)) + ", reference " + std::to_string(ref));
        if (c[i](r, col) != c1[i](r, col)) ok = fail("4 ranks and 1 rank differ at matmul " + std::to_string(i));
      }
  return ok;
}

// Every rank's report must be the same: gathers rank 0's counts and compares.
bool same_on_every_rank(const vgpu::mpi::BatchReport& report, const std::string& what) {
  std::vector<int> root = report.counts;
  root.resize(4);
  MPI_Bcast(root.data(), 4, MPI_INT, 0, MPI_COMM_WORLD);
  return root == report.counts || fail(what + ": this rank's counts differ from rank 0's");
}

std::string joined(const std::vector<int>& v) {
  std::string out;
  for (int x : v) out += (out.empty() ? "" : ",") + std::to_string(x);
  return out;
}

bool check_split() {
  bool ok = true;
  vgpu::Runtime& runtime = vgpu::Runtime::global();
  // Rank 0 on the CPU, the others on the first Vulkan (lavapipe) or else OpenGL (llvmpipe)
  // device where there is one: devices of different speed. One warm-up first, so every rank
  // reads the job's one stored calibration instead of measuring on its own.
  std::string other = "cpu:0";
  for (vgpu::BackendKind kind : {vgpu::BackendKind::vulkan, vgpu::BackendKind::opengl})
    for (const vgpu::DeviceInfo& d : runtime.devices())
      if (d.backend == kind && other == "cpu:0") other = d.id();
  if (g_rank == 0) std::printf("split: rank 0 on cpu:0, ranks 1-3 on %s\n", other.c_str());
  vgpu::mpi::warm_up(MPI_COMM_WORLD, runtime, {{"matmul", {17, 5, 3}}});
  vgpu::Cache cache(runtime.open(g_rank == 0 ? "cpu:0" : other));
  const std::uint32_t count = 17;
  std::vector<vgpu::Matrix> a, b;
  if (g_rank == 0) a = random_batch(count, 17, 5, 5), b = random_batch(count, 5, 3, 6);
  // Given speeds (deterministic): rank r runs r + 1 calls a second.
  auto run = [&](double speed, const std::vector<int>& expected, const std::string& what) {
    vgpu::mpi::BatchReport report;
    vgpu::mpi::BatchOptions options;
    options.speed = speed;
    options.report = &report;
    const std::vector<vgpu::Matrix> c = vgpu::mpi::matmul_batch(MPI_COMM_WORLD, cache, a, b, options);
    if (!expected.empty() && report.counts != expected)
      ok = fail(what + ": counts " + joined(report.counts) + ", expected " + joined(expected));
    ok = same_on_every_rank(report, what) && ok;
    if (g_rank == 0 && c.size() != count) ok = fail(what + ": " + std::to_string(c.size()) + " results");
    return report;
  };
  run(g_rank + 1.0, {2, 3, 5, 7}, "speeds 1,2,3,4");                              // 17·(1,2,3,4)/10, largest remainder
  run(g_rank == 1 ? -1.0 : g_rank + 1.0, {1, 5, 5, 6}, "rank 1 without a time");  // weighs the median 3
  run(-1.0, {5, 4, 4, 4}, "no rank with a time");                                 // even
  {
    vgpu::mpi::BatchOptions even;
    even.split = vgpu::mpi::BatchOptions::Split::even;
    vgpu::mpi::BatchReport report;
    even.report = &report;
    even.speed = g_rank + 1.0;  // ignored by even
    vgpu::mpi::matmul_batch(MPI_COMM_WORLD, cache, a, b, even);
    if (report.counts != std::vector<int>{5, 4, 4, 4} || report.measured)
      ok = fail("even: counts " + joined(report.counts));
  }
  // Measured: each rank's speed from its selection (calibrated here on first use); the counts
  // are split_by_weight of the gathered speeds, the same on every rank.
  const vgpu::mpi::BatchReport measured = run(0.0, {}, "measured");
  std::vector<double> w = measured.speeds;
  for (double x : w)
    if (!(x > 0)) ok = fail("measured: a rank has no time (" + std::to_string(x) + ")");
  if (ok) {
    const std::vector<std::uint32_t> parts = vgpu::split_by_weight(w, count);
    const std::vector<int> expected(parts.begin(), parts.end());
    if (measured.counts != expected)
      ok = fail("measured: counts " + joined(measured.counts) + " do not follow the speeds");
  }
  if (g_rank == 0) {
    std::printf("measured speeds (calls/s):");
    for (double x : measured.speeds) std::printf(" %.1f", x);
    std::printf(" -> counts %s\n", joined(measured.counts).c_str());
  }
  // Rank 0 over a DeviceSet of cpu:0 and cpu:1 (VGPU_CPU_DEVICES=2): its speed is the sum of
  // its devices' (the selection's timings), and its share is spread over them.
  bool have_set = false;
  for (const vgpu::DeviceInfo& d : runtime.devices()) have_set = have_set || d.id() == "cpu:1";
  if (g_rank == 0 && !have_set) std::printf("SKIPPED the DeviceSet rank: no cpu:1 (VGPU_CPU_DEVICES=2)\n");
  if (have_set) {
    vgpu::Cache set_cache =
        g_rank == 0 ? vgpu::Cache(vgpu::DeviceSet(runtime, {"cpu:0", "cpu:1"})) : vgpu::Cache(runtime.open(other));
    vgpu::mpi::BatchReport report;
    vgpu::mpi::BatchOptions options;
    options.report = &report;
    const std::vector<vgpu::Matrix> c = vgpu::mpi::matmul_batch(MPI_COMM_WORLD, set_cache, a, b, options);
    if (g_rank == 0) {
      double sum = 0;
      for (const vgpu::SelectionCandidate& x : runtime.explain("matmul", {17, 5, 3}).candidates)
        if ((x.device == "cpu:0" || x.device == "cpu:1") && x.eligible && x.seconds > 0) sum += 1.0 / x.seconds;
      if (!(report.speeds[0] > 0) || std::abs(report.speeds[0] - sum) > 1e-9 * sum)
        ok = fail("set rank: speed " + std::to_string(report.speeds[0]) + ", its devices' sum " + std::to_string(sum));
      for (std::uint32_t i = 0; i < count && c.size() == count; ++i)
        for (std::uint32_t r = 0; r < 17; ++r)
          for (std::uint32_t col = 0; col < 3; ++col) {
            double ref = 0, mag = 0;
            for (std::uint32_t x = 0; x < 5; ++x)
              ref += double(a[i](r, x)) * b[i](x, col), mag += std::abs(double(a[i](r, x)) * b[i](x, col));
            if (std::abs(c[i](r, col) - ref) > 1e-5 * mag + 1e-6)
              ok = fail("set rank: matmul " + std::to_string(i) + " is wrong");
          }
      if (c.size() != count) ok = fail("set rank: " + std::to_string(c.size()) + " results");
      const vgpu::MultiStats st = set_cache.multi_stats();
      std::printf("set rank: speed %.1f calls/s (cpu:0 + cpu:1), counts %s, set items %llu,%llu\n", report.speeds[0],
                  joined(report.counts).c_str(), st.items.size() > 0 ? (unsigned long long)st.items[0] : 0ull,
                  st.items.size() > 1 ? (unsigned long long)st.items[1] : 0ull);
      if (report.counts[0] > 1 && (st.items.size() != 2 || st.items[0] == 0 || st.items[1] == 0))
        ok = fail("set rank: its share did not spread over both devices");
    }
  }
  // Right results with uneven shares: against one rank's on the CPU.
  const std::vector<vgpu::Matrix> c = vgpu::mpi::matmul_batch(MPI_COMM_WORLD, cache, a, b);
  if (g_rank == 0)
    for (std::uint32_t i = 0; i < count; ++i)
      for (std::uint32_t r = 0; r < 17; ++r)
        for (std::uint32_t col = 0; col < 3; ++col) {
          double ref = 0, mag = 0;
          for (std::uint32_t x = 0; x < 5; ++x)
            ref += double(a[i](r, x)) * b[i](x, col), mag += std::abs(double(a[i](r, x)) * b[i](x, col));
          if (std::abs(c[i](r, col) - ref) > 1e-5 * mag + 1e-6)
            return fail("measured: matmul " + std::to_string(i) + " is wrong");
        }
  return ok;
}

// call_batch of each elementwise/row op on the rank's device against a double reference.
bool check_ops() {
  bool ok = true;
  vgpu::KernelDatabase db(vgpu::mpi::pick_device(vgpu::Runtime::global(), MPI_COMM_WORLD));
  std::mt19937 gen(42);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  auto random = [&](std::size_t n) {
    std::vector<float> v(n);
    for (float& x : v) x = dist(gen);
    return v;
  };
  struct Case {
    std::string op;
    vgpu::Shape shape;
    std::uint32_t count;
  };
  const std::vector<Case> cases{{"add", {1000}, 17},
                                {"add", {1}, 1},
                                {"mul", {17}, 3},
                                {"axpy", {1000}, 17},
                                {"axpy", {1}, 3},
                                {"softmax_rows", {17, 5}, 17},
                                {"softmax_rows", {1, 1}, 1},
                                {"reduce_sum", {1000}, 17},
                                {"reduce_sum", {1}, 3},
                                {"matmul", {17, 5, 3}, 17},
                                {"matmul", {1, 1, 1}, 1}};
  for (const Case& c : cases) {
    const std::string what = c.op + " x" + std::to_string(c.count);
    const std::uint64_t n = c.shape[0];
    std::vector<std::vector<float>> in;
    if (c.op == "add" || c.op == "mul")
      in = {random(c.count * n), random(c.count * n)};
    else if (c.op == "axpy")
      in = {random(c.count), random(c.count * n), random(c.count * n)};
    else if (c.op == "softmax_rows")
      in = {random(c.count * n * c.shape[1])};
    else if (c.op == "reduce_sum")
      in = {random(c.count * n)};
    else
      in = {random(c.count * n * c.shape[1]), random(c.count * c.shape[1] * c.shape[2])};
    if (g_rank != 0) in.clear();  // only the root's inputs are read
    vgpu::mpi::BatchOptions options;
    options.speed = 4.0 - g_rank;  // uneven shares (rank 0 most) without a calibration per op
    const std::vector<std::vector<float>> out = vgpu::mpi::call_batch(MPI_COMM_WORLD, db, c.op, c.shape, in, options);
    if (g_rank != 0) {
      if (!out.empty()) ok = fail(what + ": a non-root rank got outputs");
      continue;
    }
    if (out.size() != 1) {
      ok = fail(what + ": " + std::to_string(out.size()) + " outputs");
      continue;
    }
    const std::vector<float>& y = out[0];
    // Per entry: the reference and the tolerance (the op's: float32 rounding of its sums).
    for (std::uint32_t e = 0; e < c.count && ok; ++e) {
      std::vector<double> ref, tol;
      if (c.op == "add" || c.op == "mul" || c.op == "axpy")
        for (std::uint64_t i = 0; i < n; ++i) {
          const double a = in[0][c.op == "axpy" ? e : e * n + i], x = in[1][e * n + i];
          const double r = c.op == "add" ? a + x : c.op == "mul" ? a * x : a * x + in[2][e * n + i];
          ref.push_back(r), tol.push_back(1e-6 * (std::abs(a) + std::abs(x) + 1) +
                                          (c.op == "axpy" ? 1e-6 * std::abs(in[2][e * n + i]) : 0));
        }
      else if (c.op == "softmax_rows")
        for (std::uint64_t r = 0; r < n; ++r) {
          const std::uint64_t cols = c.shape[1], at = (e * n + r) * cols;
          double top = in[0][at], sum = 0;
          for (std::uint64_t j = 0; j < cols; ++j) top = std::max(top, double(in[0][at + j]));
          for (std::uint64_t j = 0; j < cols; ++j) sum += std::exp(in[0][at + j] - top);
          for (std::uint64_t j = 0; j < cols; ++j)
            ref.push_back(std::exp(in[0][at + j] - top) / sum), tol.push_back(1e-5);
        }
      else if (c.op == "reduce_sum") {
        double sum = 0, mag = 0;
        for (std::uint64_t i = 0; i < n; ++i) sum += in[0][e * n + i], mag += std::abs(in[0][e * n + i]);
        ref.push_back(sum), tol.push_back(1e-5 * mag + 1e-6);
      } else {
        const std::uint64_t m = c.shape[0], k = c.shape[1], nn = c.shape[2];
        for (std::uint64_t r = 0; r < m; ++r)
          for (std::uint64_t col = 0; col < nn; ++col) {
            double sum = 0, mag = 0;
            for (std::uint64_t x = 0; x < k; ++x) {
              const double p = double(in[0][e * m * k + r * k + x]) * in[1][e * k * nn + x * nn + col];
              sum += p, mag += std::abs(p);
            }
            ref.push_back(sum), tol.push_back(1e-5 * mag + 1e-6);
          }
      }
      if (y.size() != ref.size() * c.count) {
        ok = fail(what + ": " + std::to_string(y.size()) + " output floats, expected " +
                  std::to_string(ref.size() * c.count));
        break;
      }
      for (std::size_t i = 0; i < ref.size(); ++i)
        if (std::abs(y[e * ref.size() + i] - ref[i]) > tol[i]) {
          ok = fail(what + ": entry " + std::to_string(e) + " [" + std::to_string(i) +
                    "] = " + std::to_string(y[e * ref.size() + i]) + ", reference " + std::to_string(ref[i]));
          break;
        }
    }
  }
  return ok;
}

// Ranks that disagree on BatchOptions::root (or split), or one whose root is out of range:
// invalid_argument naming the mismatch, with a Fix, on every rank and at once (never success on
// some and a timeout on the others); a good batch afterwards still works.
bool check_root_mismatch() {
  bool ok = true;
  std::vector<vgpu::Matrix> a, b;
  if (g_rank == 0) a = random_batch(8, 16, 16, 3), b = random_batch(8, 16, 16, 4);
  vgpu::Cache cache(vgpu::Runtime::global().open("cpu:0"));
  auto expect_mismatch = [&](const std::string& what, const std::string& words,
                             const vgpu::mpi::BatchOptions& options) {
    const auto start = std::chrono::steady_clock::now();
    try {
      vgpu::mpi::matmul_batch(MPI_COMM_WORLD, cache, a, b, options);
      ok = fail(what + ": matmul_batch returned");
    } catch (const vgpu::Error& e) {
      const std::string text = e.what();
      if (e.category() != vgpu::ErrorCategory::invalid_argument || text.find(words) == std::string::npos ||
          text.find("Fix:") == std::string::npos)
        ok = fail(what + ": " + std::string(vgpu::to_string(e.category())) + ": " + text);
      else if (g_rank == 0)
        std::printf("%s: %s\n", what.c_str(), text.c_str());
    }
    // Well before the deadline: the mismatch is found, not waited out.
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (s > 20) ok = fail(what + ": took " + std::to_string(s) + " s");
  };
  vgpu::mpi::BatchOptions options;
  options.timeout = std::chrono::milliseconds(30000);
  options.root = g_rank < 2 ? 0 : 1;  // ranks 0, 1 say 0; ranks 2, 3 say 1
  expect_mismatch("roots 0,0,1,1", "different BatchOptions::root (rank 0: 0, rank 1: 0, rank 2: 1, rank 3: 1)",
                  options);
  options.root = g_rank == 3 ? 7 : 0;  // one rank's root is not a rank at all
  expect_mismatch("rank 3's root 7", "rank 3: 7", options);
  options.root = 0;
  options.split = g_rank == 1 ? vgpu::mpi::BatchOptions::Split::even : vgpu::mpi::BatchOptions::Split::measured;
  expect_mismatch("rank 1 splits evenly", "different BatchOptions::split", options);
  options.root = 9;  // the same wrong root everywhere: the range check, on every rank
  options.split = vgpu::mpi::BatchOptions::Split::even;
  expect_mismatch("root 9 everywhere", "root 9 is not a rank", options);
  // The communicator is still fine: a good batch goes through.
  options.root = 0;
  const std::vector<vgpu::Matrix> c = vgpu::mpi::matmul_batch(MPI_COMM_WORLD, cache, a, b, options);
  if (g_rank == 0 && c.size() != 8)
    ok = fail("the good batch after the mismatches returned " + std::to_string(c.size()));
  return ok;
}

bool check_failure(bool die) {
  std::vector<vgpu::Matrix> a, b;
  if (g_rank == 0) a = random_batch(8, 16, 16, 3), b = random_batch(8, 16, 16, 4);
  vgpu::Cache cache(vgpu::Runtime::global().open("cpu:0"));
  // Mid-run: one batch all ranks complete, then rank 2 fails before the next.
  const std::vector<vgpu::Matrix> first = vgpu::mpi::matmul_batch(MPI_COMM_WORLD, cache, a, b);
  if (g_rank == 0 && first.size() != 8)
    return fail("the first batch returned " + std::to_string(first.size()) + " results");
  if (g_rank == 2) {
    if (die) ::_exit(1);  // mid-run: after MPI_Init, without MPI_Finalize
    std::this_thread::sleep_for(std::chrono::seconds(20));
    return true;
  }
  const auto start = std::chrono::steady_clock::now();
  try {
    vgpu::mpi::BatchOptions options;
    // stall: no timeout of the call's own, so the deadline is the cache's device's limit (not
    // Runtime::global()'s VGPU_TIMEOUT_MS, 60 s here); die: the call's own.
    if (die)
      options.timeout = std::chrono::milliseconds(3000);
    else
      cache.device().set_timeout(std::chrono::milliseconds(1000));
    vgpu::mpi::matmul_batch(MPI_COMM_WORLD, cache, a, b, options);
  } catch (const vgpu::Error& e) {
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::fprintf(stderr, "rank %d: vgpu error (%s) after %.1f s: %s\n", g_rank,
                 std::string(vgpu::to_string(e.category())).c_str(), s, e.what());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 4);
  }
  return fail("matmul_batch returned although rank 2 never took part");
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  const std::string mode = argc >= 2 ? argv[1] : "";
  bool ok = false;
  try {
    if (mode == "warm" && argc == 3)
      ok = check_warm(argv[2]);
    else if (mode == "warm-fail")
      ok = check_warm_failure();
    else if (mode == "batch")
      ok = check_batch();
    else if (mode == "split")
      ok = check_split();
    else if (mode == "ops")
      ok = check_ops();
    else if (mode == "stall" || mode == "die")
      ok = check_failure(mode == "die");
    else if (mode == "root")
      ok = check_root_mismatch();
    else {
      std::fprintf(
          stderr,
          "usage: vgpu-mpi-check warm directory|bundle | warm-fail | batch | split | ops | stall | die | root\n");
      MPI_Finalize();
      return 2;
    }
  } catch (const std::exception& e) {
    ok = fail(e.what());
  }
  int mine = ok ? 0 : 1, any = 0;
  MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (g_rank == 0) std::printf("%s\n", any ? "FAILED" : "PASSED");
  MPI_Finalize();
  return any ? 3 : 0;
}
