// SPDX-License-Identifier: Apache-2.0
// bench/bench_mpi_cold.cpp — vgpu-bench-mpi-cold: the cold start of an MPI job (issue 18).
//
//   vgpu-bench-mpi-cold [--np N] [--quick] [--check] [--json FILE]
//
// Runs mpirun itself, one fresh job per row, each with an empty cache directory, and prints
// side by side (1 rank, then N ranks; default N=4, oversubscribed where cores are fewer):
//   alone         — every rank warms up by itself in a private directory (no sharing: the cost
//                   MPI users pay today, N × one rank's compiles and calibrations);
//   shared race   — one shared directory, no coordination: ranks race, most compile anyway;
//   warm_up dir   — vgpu::mpi::warm_up, Share::directory: the group's first rank compiles,
//                   the others load from the shared directory;
//   warm_up bundle— vgpu::mpi::warm_up, Share::bundle, private directories: rank 0 compiles,
//                   broadcasts a cache bundle, the others import it.
// Columns: the job's source compiles and calibrations (sums over ranks, from Runtime counters),
// the warm-up's wall time (slowest rank, MPI_Wtime) and the whole mpirun's (process start
// included), and each against one rank alone. The work per rank: a selection (calibration on
// every device) and a first call of matmul at 3 shapes (--quick: 2), and 8 user GLSL kernels
// (--quick: 2) compiled on every Vulkan and OpenGL device. Device figures differ by
// machine; no time is asserted. --check (ctest's bench.mpi_cold, so CI prints the table) also
// fails (exit 4) unless both warm_up modes' job compiles and calibrations equal one rank's: exact
// counts, the "the sum over ranks of source compiles equals that of one rank".
//
// Internally each rank runs `vgpu-bench-mpi-cold --rank MODE` under mpirun.
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "vgpu/mpi.hpp"
#include "vgpu/vgpu.hpp"

#ifndef VGPU_MPIEXEC
#define VGPU_MPIEXEC "mpirun"
#endif

namespace {

std::vector<vgpu::mpi::WarmUpItem> items(bool quick) {
  std::vector<vgpu::mpi::WarmUpItem> out{{"matmul", {64, 64, 64}}, {"matmul", {17, 33, 9}}};
  if (!quick) out.push_back({"matmul", {256, 256, 256}});
  return out;
}

// User kernels (complete GLSL compute shaders, compiled from source at run time on Vulkan and
// OpenGL; the built-in ops come precompiled): the keys whose compiles the warm-up shares.
void compile_user_kernels(vgpu::Runtime& runtime, bool quick) {
  const int kernels = quick ? 2 : 8;
  for (const vgpu::DeviceInfo& d : runtime.devices()) {
    if (d.backend != vgpu::BackendKind::vulkan && d.backend != vgpu::BackendKind::opengl) continue;
    vgpu::Device device = runtime.open(d);
    for (int i = 0; i < kernels; ++i) {
      vgpu::KernelSource src;
      src.name = "bench_mpi_cold." + std::to_string(i);
      src.add_glsl_shader(
          "#version 450\nlayout(local_size_x = 64) in;\n"
          "layout(std430, set = 0, binding = 0) buffer Data { float v[]; } data;\n"
          "void main() { uint i = gl_GlobalInvocationID.x; if (i < data.v.length()) data.v[i] = " +
          std::to_string(i + 2) + ".0 * data.v[i] + 1.0; }\n");
      device.compile(src);
    }
  }
}

// One rank of one job: prints "RESULT compiles=.. calibrations=.. seconds=.." on rank 0.
int rank_main(const std::string& mode, bool quick) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  vgpu::Runtime& runtime = vgpu::Runtime::global();
  MPI_Barrier(MPI_COMM_WORLD);
  const double start = MPI_Wtime();
  std::uint64_t local[2] = {0, 0};
  const auto work = items(quick);
  if (mode == "alone" || mode == "race") {
    const vgpu::CounterSnapshot before = runtime.counters();
    const double t0 = MPI_Wtime();
    for (const auto& item : work)
      if (runtime.explain(item.op, item.shape).source == vgpu::SelectionSource::calibrated) ++local[1];
    const double t1 = MPI_Wtime();
    const std::uint64_t calibration_compiles = (runtime.counters() - before).source_compiles;
    compile_user_kernels(runtime, quick);
    local[0] = (runtime.counters() - before).source_compiles;
    // The model's constants (docs/scale-out.md): seconds per calibrated item, per user-kernel compile.
    if (rank == 0)
      std::printf("PHASES calibrate_s=%.3f items=%zu compile_s=%.3f kernels=%llu\n", t1 - t0, work.size(),
                  MPI_Wtime() - t1, static_cast<unsigned long long>(local[0] - calibration_compiles));
  } else {
    vgpu::mpi::WarmUpOptions options;
    options.share =
        mode == "bundle" ? vgpu::mpi::WarmUpOptions::Share::bundle : vgpu::mpi::WarmUpOptions::Share::directory;
    options.timeout = std::chrono::minutes(10);  // a host of 8 GPUs calibrates 25 candidates
    options.work = [quick](vgpu::Runtime& r) { compile_user_kernels(r, quick); };
    const vgpu::mpi::WarmUpReport r = vgpu::mpi::warm_up(MPI_COMM_WORLD, runtime, work, options);
    local[0] = r.local.source_compiles, local[1] = r.calibrations;
    // job_bundle_bytes: what the job moved, (groups - 1) bundles (only the group leaders receive it).
    if (rank == 0 && r.bundle_bytes)
      std::printf("PHASES bundle_bytes=%llu groups=%d job_bundle_bytes=%llu\n",
                  static_cast<unsigned long long>(r.bundle_bytes), r.groups,
                  static_cast<unsigned long long>(r.job_bundle_bytes));
  }
  // Every rank's first real call on its chosen device: what a job does next.
  const vgpu::CounterSnapshot before = runtime.counters();
  vgpu::Cache cache;
  for (const auto& item : work) {
    const auto m = static_cast<std::uint32_t>(item.shape[0]), k = static_cast<std::uint32_t>(item.shape[1]),
               n = static_cast<std::uint32_t>(item.shape[2]);
    cache.matmul(vgpu::Matrix(m, k, 1.0f), vgpu::Matrix(k, n, 1.0f));
  }
  local[0] += (runtime.counters() - before).source_compiles;
  double seconds = MPI_Wtime() - start, slowest = 0;
  std::uint64_t job[2] = {0, 0};
  MPI_Reduce(local, job, 2, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
  MPI_Reduce(&seconds, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  if (rank == 0)
    std::printf("RESULT compiles=%llu calibrations=%llu seconds=%.3f\n", static_cast<unsigned long long>(job[0]),
                static_cast<unsigned long long>(job[1]), slowest);
  return 0;
}

struct Row {
  std::uint64_t compiles = 0, calibrations = 0;
  double seconds = 0, wall = 0;
  bool ok = false;
};

// Runs one fresh job of np ranks in mode; parses rank 0's RESULT line.
Row run_job(const std::string& self, int np, const std::string& mode, bool quick, const std::filesystem::path& root) {
  const std::filesystem::path dir = root / (mode + "-" + std::to_string(np));
  std::filesystem::create_directories(dir);
  const bool private_dirs = mode == "alone" || mode == "bundle";
  std::string cache = private_dirs ? "VGPU_CACHE_DIR=" + dir.string() + "/rank$OMPI_COMM_WORLD_RANK"
                                   : "VGPU_CACHE_DIR=" + dir.string() + "/shared";
  std::string cmd = std::string(VGPU_MPIEXEC) + " -np " + std::to_string(np) +
                    " --oversubscribe --mca btl_vader_single_copy_mechanism none" +
                    (::geteuid() == 0 ? " --allow-run-as-root" : "") + " bash -c '" + cache +
                    " MESA_SHADER_CACHE_DIR=" + dir.string() +
                    "/mesa$OMPI_COMM_WORLD_RANK VGPU_BACKGROUND=0 exec \"$0\" --rank " + mode +
                    (quick ? " --quick" : "") + "' " + self + " > " + (dir / "out").string() + " 2>&1";
  const auto start = std::chrono::steady_clock::now();
  const int rc = std::system(cmd.c_str());
  Row row;
  row.wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::ifstream in(dir / "out");
  std::string line;
  while (std::getline(in, line)) {
    unsigned long long c = 0, k = 0;
    double s = 0;
    if (line.rfind("PHASES bundle", 0) == 0) std::printf("%s job: %s\n", mode.c_str(), line.c_str() + 7);
    if (line.rfind("PHASES calibrate", 0) == 0 && np == 1) std::printf("one rank's phases: %s\n", line.c_str() + 7);
    if (std::sscanf(line.c_str(), "RESULT compiles=%llu calibrations=%llu seconds=%lf", &c, &k, &s) == 3)
      row.compiles = c, row.calibrations = k, row.seconds = s, row.ok = rc == 0;
  }
  if (!row.ok)
    std::fprintf(stderr, "vgpu-bench-mpi-cold: job %s np=%d failed (exit %d); see %s\n", mode.c_str(), np, rc,
                 (dir / "out").c_str());
  return row;
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false, check = false;
  int np = 4;
  std::string json, rank_mode;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--quick")
      quick = true;
    else if (a == "--check")
      check = true;
    else if (a == "--np" && i + 1 < argc)
      np = std::atoi(argv[++i]);
    else if (a == "--json" && i + 1 < argc)
      json = argv[++i];
    else if (a == "--rank" && i + 1 < argc)
      rank_mode = argv[++i];
    else {
      std::fprintf(stderr, "usage: vgpu-bench-mpi-cold [--np N] [--quick] [--check] [--json FILE]\n");
      return 2;
    }
  }
  if (!rank_mode.empty()) {
    MPI_Init(&argc, &argv);
    int rc = 3;
    try {
      rc = rank_main(rank_mode, quick);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "vgpu-bench-mpi-cold: %s\n", e.what());
      MPI_Abort(MPI_COMM_WORLD, 3);
    }
    MPI_Finalize();
    return rc;
  }
  if (np < 2) {
    std::fprintf(stderr, "vgpu-bench-mpi-cold: --np must be at least 2. Fix: pass --np 4 (the default) or more.\n");
    return 2;
  }
  const std::filesystem::path root =
      std::filesystem::temp_directory_path() / ("vgpu-bench-mpi-cold-" + std::to_string(::getpid()));
  const std::string self = std::filesystem::canonical("/proc/self/exe").string();
  std::printf("vgpu-bench-mpi-cold: %d ranks against 1, fresh cache per job, matmul at %zu shapes\n", np,
              items(quick).size());
  const Row one = run_job(self, 1, "alone", quick, root);
  std::printf("%-16s %5s %9s %6s %9s %6s %9s %6s %9s %6s\n", "mode", "ranks", "compiles", "x1", "calibr.", "x1",
              "warm s", "x1", "mpirun s", "x1");
  auto print = [&](const char* name, int ranks, const Row& r) {
    auto ratio = [](double a, double b) { return b > 0 ? a / b : 0.0; };
    std::printf("%-16s %5d %9llu %6.2f %9llu %6.2f %9.3f %6.2f %9.3f %6.2f%s\n", name, ranks,
                static_cast<unsigned long long>(r.compiles), ratio(double(r.compiles), double(one.compiles)),
                static_cast<unsigned long long>(r.calibrations),
                ratio(double(r.calibrations), double(one.calibrations)), r.seconds, ratio(r.seconds, one.seconds),
                r.wall, ratio(r.wall, one.wall), r.ok ? "" : "  (failed)");
  };
  print("one rank", 1, one);
  std::map<std::string, Row> rows;
  for (const char* mode : {"alone", "race", "directory", "bundle"}) {
    rows[mode] = run_job(self, np, mode, quick, root);
    const char* name = std::string(mode) == "alone"       ? "alone"
                       : std::string(mode) == "race"      ? "shared race"
                       : std::string(mode) == "directory" ? "warm_up dir"
                                                          : "warm_up bundle";
    print(name, np, rows[mode]);
  }
  bool ok = one.ok;
  for (const auto& [mode, r] : rows) ok = ok && r.ok;
  if (!json.empty()) {
    std::ofstream out(json);
    out << "{\"np\":" << np << ",\"rows\":{";
    out << "\"one\":{\"compiles\":" << one.compiles << ",\"calibrations\":" << one.calibrations
        << ",\"seconds\":" << one.seconds << ",\"wall\":" << one.wall << "}";
    for (const auto& [mode, r] : rows)
      out << ",\"" << mode << "\":{\"compiles\":" << r.compiles << ",\"calibrations\":" << r.calibrations
          << ",\"seconds\":" << r.seconds << ",\"wall\":" << r.wall << "}";
    out << "}}\n";
  }
  std::error_code ec;
  std::filesystem::remove_all(root, ec);
  if (!ok) return 3;
  if (check)
    for (const char* mode : {"directory", "bundle"})
      if (rows[mode].compiles != one.compiles || rows[mode].calibrations != one.calibrations) {
        std::fprintf(
            stderr,
            "vgpu-bench-mpi-cold: warm_up %s: %d ranks made %llu source compiles and %llu calibrations, one rank "
            "%llu and %llu; the job must pay one per key. Fix: see docs/scale-out.md, \"The warm-up protocol\".\n",
            mode, np, static_cast<unsigned long long>(rows[mode].compiles),
            static_cast<unsigned long long>(rows[mode].calibrations), static_cast<unsigned long long>(one.compiles),
            static_cast<unsigned long long>(one.calibrations));
        return 4;
      }
  return 0;
}
