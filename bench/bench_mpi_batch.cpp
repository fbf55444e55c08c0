// SPDX-License-Identifier: Apache-2.0
// bench/bench_mpi_batch.cpp — vgpu-bench-mpi-batch: a batch of matmuls over MPI ranks
// (vgpu::mpi::matmul_batch, issue 18), one rank against N, even against measured shares.
//
//   vgpu-bench-mpi-batch [--np N] [--count C] [--size S] [--reps R] [--rank0 ID] [--json FILE]
//
// Starts one mpirun job of N ranks (default 4, oversubscribed where cores are fewer; each
// rank on pick_device's device, VGPU_DEVICE to force one). The ranks warm up matmul at S³ (one
// calibration for the job), then rank 0 times, median of R runs each (default 3), a batch of
// C (default 64) S³ matmuls (default 256): on rank 0 alone (a communicator of one), over the N
// ranks with even shares, and with measured shares, and prints the times and the ratios to
// one rank side by side, with the counts each split used. --rank0 ID puts rank 0 on another
// device (e.g. cpu:0) to see the measured split on unlike devices. Device figures differ by
// machine; no figure is asserted. Internally each rank runs `vgpu-bench-mpi-batch --rank`.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "vgpu/mpi.hpp"
#include "vgpu/vgpu.hpp"

#ifndef VGPU_MPIEXEC
#define VGPU_MPIEXEC "mpirun"
#endif

namespace {

struct Args {
  int np = 4, reps = 3;
  std::uint32_t count = 64, size = 256;
  std::string rank0, json;
};

std::string joined(const std::vector<int>& v) {
  std::string out;
  for (int x : v) out += (out.empty() ? "" : ",") + std::to_string(x);
  return out;
}

int rank_main(const Args& args) {
  int rank = 0, ranks = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  vgpu::Runtime& runtime = vgpu::Runtime::global();
  const std::uint32_t s = args.size;
  vgpu::mpi::WarmUpOptions warm;
  warm.timeout = std::chrono::minutes(10);  // a host of 8 GPUs calibrates 25 candidates
  vgpu::mpi::warm_up(MPI_COMM_WORLD, runtime, {{"matmul", {s, s, s}}}, warm);
  vgpu::Device device = vgpu::mpi::pick_device(runtime, MPI_COMM_WORLD);
  if (rank == 0 && !args.rank0.empty()) device = runtime.open(args.rank0);
  vgpu::Cache cache(device);
  std::vector<vgpu::Matrix> a, b;
  if (rank == 0) {
    std::mt19937 gen(1);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    for (std::uint32_t i = 0; i < args.count; ++i) {
      a.emplace_back(s, s), b.emplace_back(s, s);
      for (float& x : a.back().data) x = dist(gen);
      for (float& x : b.back().data) x = dist(gen);
    }
  }
  MPI_Comm self = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, rank == 0 ? 0 : MPI_UNDEFINED, 0, &self);
  // Median seconds of reps batches on comm (rank 0's clock; every rank of comm takes part).
  auto timed = [&](MPI_Comm comm, vgpu::mpi::BatchOptions::Split split, vgpu::mpi::BatchReport& report) {
    std::vector<double> t;
    vgpu::mpi::BatchOptions options;
    options.split = split;
    options.report = &report;
    options.timeout = std::chrono::minutes(10);
    vgpu::mpi::matmul_batch(comm, cache, a, b, options);  // first call: kernels built, selection read
    for (int r = 0; r < args.reps; ++r) {
      MPI_Barrier(comm);
      const double start = MPI_Wtime();
      vgpu::mpi::matmul_batch(comm, cache, a, b, options);
      t.push_back(MPI_Wtime() - start);
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
  };
  vgpu::mpi::BatchReport one_report, even_report, measured_report;
  double one = 0;
  if (rank == 0) one = timed(self, vgpu::mpi::BatchOptions::Split::even, one_report);
  MPI_Barrier(MPI_COMM_WORLD);
  const double even = timed(MPI_COMM_WORLD, vgpu::mpi::BatchOptions::Split::even, even_report);
  const double measured = timed(MPI_COMM_WORLD, vgpu::mpi::BatchOptions::Split::measured, measured_report);
  if (self != MPI_COMM_NULL) MPI_Comm_free(&self);
  // Each rank's device, for the table.
  char id[32] = {};
  std::snprintf(id, sizeof id, "%s", device.info().id().c_str());
  std::vector<char> ids(32 * static_cast<std::size_t>(ranks));
  MPI_Gather(id, 32, MPI_CHAR, ids.data(), 32, MPI_CHAR, 0, MPI_COMM_WORLD);
  if (rank != 0) return 0;
  std::string devices;
  for (int r = 0; r < ranks; ++r) devices += std::string(r ? "," : "") + (ids.data() + 32 * r);
  const double flops = 2.0 * s * s * s * args.count;
  std::printf("vgpu-bench-mpi-batch: %u x %u^3 matmuls, %d ranks on %s, median of %d\n", args.count, s, ranks,
              devices.c_str(), args.reps);
  std::printf("%-18s %5s %10s %9s %7s  %s\n", "split", "ranks", "seconds", "GFLOP/s", "x1", "counts");
  auto row = [&](const char* name, int n, double t, const vgpu::mpi::BatchReport& r) {
    std::printf("%-18s %5d %10.4f %9.2f %7.2f  %s\n", name, n, t, flops / t / 1e9, one / t, joined(r.counts).c_str());
  };
  row("one rank", 1, one, one_report);
  row("even", ranks, even, even_report);
  row("measured", ranks, measured, measured_report);
  std::printf("measured speeds (calls/s):");
  for (double x : measured_report.speeds) std::printf(" %.1f", x);
  std::printf("\n");
  if (!args.json.empty()) {
    std::ofstream out(args.json);
    out << "{\"count\":" << args.count << ",\"size\":" << s << ",\"ranks\":" << ranks << ",\"one_s\":" << one
        << ",\"even_s\":" << even << ",\"measured_s\":" << measured << ",\"measured_counts\":["
        << joined(measured_report.counts) << "]}\n";
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  bool as_rank = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--rank")
      as_rank = true;
    else if (a == "--np")
      args.np = std::atoi(next().c_str());
    else if (a == "--count")
      args.count = static_cast<std::uint32_t>(std::atoi(next().c_str()));
    else if (a == "--size")
      args.size = static_cast<std::uint32_t>(std::atoi(next().c_str()));
    else if (a == "--reps")
      args.reps = std::atoi(next().c_str());
    else if (a == "--rank0")
      args.rank0 = next();
    else if (a == "--json")
      args.json = next();
    else {
      std::fprintf(
          stderr,
          "usage: vgpu-bench-mpi-batch [--np N] [--count C] [--size S] [--reps R] [--rank0 ID] [--json FILE]\n");
      return 2;
    }
  }
  if (args.np < 2 || args.count == 0 || args.size == 0 || args.reps < 1) {
    std::fprintf(stderr,
                 "vgpu-bench-mpi-batch: --np must be at least 2, --count, --size and --reps at least 1. "
                 "Fix: pass e.g. --np 4 --count 64 --size 256 --reps 3.\n");
    return 2;
  }
  if (as_rank) {
    MPI_Init(&argc, &argv);
    int rc = 3;
    try {
      rc = rank_main(args);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "vgpu-bench-mpi-batch: %s\n", e.what());
      MPI_Abort(MPI_COMM_WORLD, 3);
    }
    MPI_Finalize();
    return rc;
  }
  // Re-run this program under mpirun with the same arguments (the rank side).
  std::string cmd = std::string(VGPU_MPIEXEC) + " -np " + std::to_string(args.np) +
                    " --oversubscribe --mca btl_vader_single_copy_mechanism none" +
                    (::geteuid() == 0 ? " --allow-run-as-root" : "") + " " +
                    std::filesystem::canonical("/proc/self/exe").string() + " --rank";
  for (int i = 1; i < argc; ++i) cmd += std::string(" '") + argv[i] + "'";
  const int rc = std::system(cmd.c_str());
  return rc == 0 ? 0 : 3;
}
