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
//                           and against the same batch on one rank (identical)
//   vgpu-mpi-check stall    after one good batch, rank 2 sleeps through the next: the others must throw vgpu::Error
//                           (timeout) within 1 s, print it and MPI_Abort
//   vgpu-mpi-check die      after one good batch, rank 2 calls _exit(1) before the next: the others must not hang
//
// Exit 0 when the checks pass, 3 when one failed (the rank prints why).
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
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
  options.share = share == "bundle" ? vgpu::mpi::WarmUpOptions::Share::bundle : vgpu::mpi::WarmUpOptions::Share::directory;
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
    ok = fail("a rank that did not compile first made " + std::to_string(report.local.source_compiles) + " source compiles");
  if (!compiled && report.calibrations != 0) ok = fail("a rank that did not compile first calibrated");
  if (report.job_source_compiles != compilers[0])
    ok = fail("job source compiles " + std::to_string(report.job_source_compiles) + " != the compiling ranks' " +
              std::to_string(compilers[0]));
  if (report.job_calibrations != compilers[1] || compilers[1] != items.size() * report.compiling_ranks)
    ok = fail("job calibrations " + std::to_string(report.job_calibrations) + ", expected one per item per compiling rank");
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

std::vector<vgpu::Matrix> random_batch(std::uint32_t count, std::uint32_t rows, std::uint32_t cols, std::uint32_t seed) {
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

bool check_batch() {
  const std::uint32_t count = 17, m = 17, k = 33, n = 9;
  std::vector<vgpu::Matrix> a, b;
  if (g_rank == 0) a = random_batch(count, m, k, 1), b = random_batch(count, k, n, 2);
  vgpu::Cache cache(vgpu::mpi::pick_device(vgpu::Runtime::global(), MPI_COMM_WORLD));
  const std::vector<vgpu::Matrix> c = vgpu::mpi::matmul_batch(MPI_COMM_WORLD, cache, a, b);
  // Each rank alone on the same device kind: the same batch on one communicator of one rank.
  MPI_Comm self = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, g_rank, 0, &self);
  const std::vector<vgpu::Matrix> c1 = g_rank == 0 ? vgpu::mpi::matmul_batch(self, cache, a, b) : std::vector<vgpu::Matrix>{};
  MPI_Comm_free(&self);
  if (g_rank != 0) return c.empty() || fail("a non-root rank got C");
  if (c.size() != count) return fail("got " + std::to_string(c.size()) + " results, expected 17");
  bool ok = true;
  for (std::uint32_t i = 0; i < count; ++i)
    for (std::uint32_t r = 0; r < m; ++r)
      for (std::uint32_t col = 0; col < n; ++col) {
        double ref = 0, mag = 0;
        for (std::uint32_t x = 0; x < k; ++x) ref += double(a[i](r, x)) * b[i](x, col), mag += std::abs(double(a[i](r, x)) * b[i](x, col));
        if (std::abs(c[i](r, col) - ref) > 1e-5 * mag + 1e-6)
          return fail("matmul " + std::to_string(i) + " (" + std::to_string(r) + "," + std::to_string(col) + ") = " +
                      std::to_string(c[i](r, col)) + ", reference " + std::to_string(ref));
        if (c[i](r, col) != c1[i](r, col)) ok = fail("4 ranks and 1 rank differ at matmul " + std::to_string(i));
      }
  return ok;
}

bool check_failure(bool die) {
  std::vector<vgpu::Matrix> a, b;
  if (g_rank == 0) a = random_batch(8, 16, 16, 3), b = random_batch(8, 16, 16, 4);
  vgpu::Cache cache(vgpu::Runtime::global().open("cpu:0"));
  // Mid-run: one batch all ranks complete, then rank 2 fails before the next.
  const std::vector<vgpu::Matrix> first = vgpu::mpi::matmul_batch(MPI_COMM_WORLD, cache, a, b);
  if (g_rank == 0 && first.size() != 8) return fail("the first batch returned " + std::to_string(first.size()) + " results");
  if (g_rank == 2) {
    if (die) ::_exit(1);  // mid-run: after MPI_Init, without MPI_Finalize
    std::this_thread::sleep_for(std::chrono::seconds(20));
    return true;
  }
  const auto start = std::chrono::steady_clock::now();
  try {
    vgpu::mpi::BatchOptions options;
    options.timeout = std::chrono::milliseconds(die ? 3000 : 1000);
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
    if (mode == "warm" && argc == 3) ok = check_warm(argv[2]);
    else if (mode == "warm-fail") ok = check_warm_failure();
    else if (mode == "batch") ok = check_batch();
    else if (mode == "stall" || mode == "die") ok = check_failure(mode == "die");
    else {
      std::fprintf(stderr, "usage: vgpu-mpi-check warm directory|bundle | warm-fail | batch | stall | die\n");
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
